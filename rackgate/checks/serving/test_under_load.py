"""SRV-LONGCTX and SRV-DEADLOCK: the server under the loads that broke it on the real rack. They run
after the other serving checks (rackgate/fixtures/server.py orders them): a failure here can leave the
server dead or stuck. The load itself is rackgate.atom.load; SRV-DEADLOCK decides on the log
(`_sync_dp_state failed` and the rank that did not log it), never on latency."""
import pytest

from rackgate.atom import load, logfacts
from rackgate.atom.logs import rank_table
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import read_logs
from rackgate.gates import lint, sanity, serverlogs
from rackgate.report.verdict import check, fail


def _ranks_alive(server, rack) -> list[str]:
    gone = load.ranks_alive(server.client, rank_table(rack), rack.serving.alive_timeout_s)
    for r, (msg, dead) in gone.items():
        if dead:
            server.dead_ranks[r] = msg
    return [msg for msg, _ in gone.values()]


@pytest.mark.row("SRV-LONGCTX")
def test_long_prompts_at_concurrency(server, rack, server_logs, evidence):
    cfg = rack.serving
    cmd = server.command_for(rack.head, 0) if not server.attached else rack.launch.command
    raw = lint.flags(cmd).get("max-num-batched-tokens")
    chunk = int(raw) if raw and raw.isdigit() else lint.ATOM_DEFAULT_BATCHED_TOKENS
    words = int(chunk * cfg.longctx_multiple)
    ranks = list(rank_table(rack))  # one long prompt for every rank: each runs a chunked prefill
    prompts = [load.prompt(words, r) for r in ranks]
    out = load.send_all(server.client, prompts, 8, cfg.longctx_timeout_s, cfg.longctx_concurrency, ranks,
                        degenerate=sanity.degenerate, degenerate_so_far=sanity.degenerate_so_far)
    _no_degenerate(out, "SRV-LONGCTX", server.url)
    problems = out.problems + [f"{out.pending} request(s) unanswered after {cfg.longctx_timeout_s:g}s"] * bool(out.pending)
    phi = []
    for log in server_logs.values():
        for rec in read_logs(log.grep, "PHINode::setIncomingValue"):
            phi.append(f"{log.who(rec)} line {rec.lineno}: {rec.text.strip()[:160]}")
    dead = _ranks_alive(server, rack)
    evidence.attach("long-prompt load", f"{len(prompts)} prompts of ~{words} tokens ({cfg.longctx_multiple:g} x "
                    f"--max-num-batched-tokens {chunk}) at concurrency {cfg.longctx_concurrency}\n"
                    f"failed: {problems}\nPHI lines: {phi}\nranks not answering afterwards: {dead}")
    seen = []
    if phi:
        seen.append(f"PHINode::setIncomingValue assertion: {phi[0]}")
    if problems:
        seen.append(f"{len(problems)} of {len(prompts)} long prompts failed ({problems[0][:120]})")
    if dead:
        seen.append(f"engine gone afterwards: {len(dead)} rank(s) do not answer ({dead[0][:120]})")
    check(not seen, "SRV-LONGCTX", server.url, "; ".join(seen))


def _no_degenerate(out, rid: str, where: str) -> None:
    """A degenerate answer under load is SRV-SANITY's finding, named at once (the load stopped on it)."""
    if out.degenerate:
        fail("SRV-SANITY", where, f"{rid}'s load: {len(out.degenerate)} of {out.completed} answers back are degenerate "
             f"(the load stopped on the first): {'; '.join(out.degenerate[:4])}")


SYNC_FAILED = "_sync_dp_state failed"


def _timeouts_logged(server_logs) -> int:
    return sum(log.count(SYNC_FAILED) for log in server_logs.values())


def _until_settled(server_logs, poll_s: float):
    """stop() for the load: True once some rank has logged the DP-sync timeout and no further
    rank has logged it for one more poll (the others time out at about the same moment)."""
    last = {"n": 0}

    def stop() -> bool:
        n = _timeouts_logged(server_logs)
        settled = n > 0 and n == last["n"]
        last["n"] = n
        return settled
    return stop


@pytest.mark.row("SRV-DEADLOCK")
def test_no_dp_sync_deadlock(server, rack, server_logs, evidence):
    # the verdict rests on what the ranks log: a log the suite cannot read says nothing
    if server.boot is not None and server.boot.format_note:
        raise CouldNotObserve(server.boot.format_note)
    cfg = rack.serving
    prompts = [load.prompt(600, s) for s in range(cfg.deadlock_requests)]
    poll_s = min(5.0, max(0.5, cfg.deadlock_window_s / 20))
    out = load.send_all(server.client, prompts, 64, cfg.deadlock_window_s, cfg.deadlock_requests,
                        stop=_until_settled(server_logs, poll_s), poll_s=poll_s,
                        degenerate=sanity.degenerate, degenerate_so_far=sanity.degenerate_so_far)
    _no_degenerate(out, "SRV-DEADLOCK", server.url)
    table = rank_table(rack)
    timed_out: dict[int, str] = {}
    unlabelled: dict[str, int] = {}
    kv_lines: dict[int, str] = {}
    lines = []
    for n, log in server_logs.items():
        for rec in read_logs(log.grep, SYNC_FAILED, "KV usage:"):
            if logfacts.kv_usage(rec.text) is not None:
                r = log.rank_of(rec)
                if r is not None:
                    kv_lines[r] = rec.text.strip()
                continue
            if logfacts.sync_dp_failed(rec.text) is None:
                continue
            lines.append(f"{log.who(rec)} line {rec.lineno}: {rec.text.strip()[:160]}")
            r = log.rank_of(rec)
            if r is None:
                unlabelled[n] = unlabelled.get(n, 0) + 1
            else:
                timed_out[r] = rec.text.strip()
    evidence.attach("load and _sync_dp_state lines",
                    f"{out.sent} requests, {out.completed} answered ({len(out.problems)} not 200), {out.pending} "
                    f"unanswered after {out.seconds:.1f}s (window {cfg.deadlock_window_s:g}s"
                    f"{', stopped on log evidence' if out.stopped_early else ''})\n" + "\n".join(lines))
    if unlabelled:
        quiet = [f"{n} (logged {unlabelled.get(n, 0)} timeouts for dp{log.ranks.start}-dp{log.ranks.stop - 1})"
                 for n, log in server_logs.items() if unlabelled.get(n, 0) < len(log.ranks)]
        check(False, "SRV-DEADLOCK", rack.name, f"`_sync_dp_state failed` logged without rank labels "
              f"(launch.rank_labels off); the rank that did not log it is on: {', '.join(quiet) or '?'}")
    findings = serverlogs.deadlock(timed_out, list(table), kv_lines, table)
    if not findings and out.pending:
        raise CouldNotObserve(f"{out.pending} of {out.sent} requests unanswered after {cfg.deadlock_window_s:g}s "
                              f"(serving.deadlock_window_s) and no rank logged `{SYNC_FAILED}`: slow, not a "
                              "deadlock by the log; wait at least ATOM's DP-sync timeout (1800 s) to tell")
    who = next((f"{table[r]}/dp{r}" for r in table if timed_out and r not in timed_out), rack.name)
    check(not findings, "SRV-DEADLOCK", who, "; ".join(findings)
          + (f"; the client saw {out.pending} of {out.sent} requests hang with no error" if out.pending else ""))
