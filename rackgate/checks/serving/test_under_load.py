"""SRV-DEADLOCK: the server under the load that broke it on the real rack. It runs after the other
serving checks (the catalogue's order): a failure here can leave the server dead or stuck
(SRV-LONGCTX, the other load, is declared: rackgate/gates/srv.py). The load's prompts are
rackgate.probes.load; SRV-DEADLOCK decides on the log (`_sync_dp_state failed` and the rank that did
not log it), never on latency."""
import pytest

from rackgate.atom import logfacts
from rackgate.atom.logs import rank_table
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import read_logs, settle
from rackgate.gates import sanity, serverlogs
from rackgate.probes import load
from rackgate.report.verdict import check, fail


def _degenerate(g) -> bool:
    return bool(g.stopped or (not g.error and g.replied and sanity.degenerate(g.text)))


def _no_degenerate(spread, rid: str, where: str) -> None:
    """A degenerate answer under load is SRV-SANITY's finding, named at once (the load stopped on it)."""
    bad = spread.share(lambda g: g.stopped or (sanity.degenerate(g.text) if not g.error else None),
                       "answers degenerate")
    if bad:
        fail("SRV-SANITY", bad.where or where, f"{rid}'s load: {bad.line}")


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
def test_no_dp_sync_deadlock(server, per_rank, rack, server_logs, evidence):
    # the verdict rests on what the ranks log: a log the suite cannot read says nothing
    if server.boot is not None and server.boot.format_note:
        raise CouldNotObserve(server.boot.format_note)
    cfg = rack.serving
    poll_s = min(5.0, max(0.5, cfg.deadlock_window_s / 20))
    spread = per_rank.ask([load.prompt(600, s) for s in range(cfg.deadlock_requests)], 64,
                          attached=cfg.deadlock_requests, at_least=cfg.deadlock_requests,
                          timeout=cfg.deadlock_window_s, stop=_until_settled(server_logs, poll_s),
                          stop_when=sanity.degenerate_so_far, decisive=_degenerate)
    _no_degenerate(spread, "SRV-DEADLOCK", server.url)
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
    evidence.attach("load and _sync_dp_state lines", spread.evidence() + f"\n(window {cfg.deadlock_window_s:g}s)\n"
                    + "\n".join(lines))
    if unlabelled:
        quiet = [f"{n} (logged {unlabelled.get(n, 0)} timeouts for dp{log.ranks.start}-dp{log.ranks.stop - 1})"
                 for n, log in server_logs.items() if unlabelled.get(n, 0) < len(log.ranks)]
        check(False, "SRV-DEADLOCK", rack.name, f"`_sync_dp_state failed` logged without rank labels "
              f"(launch.rank_labels off); the rank that did not log it is on: {', '.join(quiet) or '?'}")
    findings = serverlogs.deadlock(timed_out, list(table), kv_lines, table)
    if not findings and spread.replied:  # some came back: a hang is a finding (the hang rule)
        settle(spread, "SRV-DEADLOCK", server, evidence, own=f"no rank logged `{SYNC_FAILED}`")
    out_ = len(spread.hung) + spread.cancelled + sum(1 for g in spread.got if not g.replied)
    if not findings and out_:
        raise CouldNotObserve(f"{out_} of {spread.asked} requests unanswered after {cfg.deadlock_window_s:g}s "
                              f"(serving.deadlock_window_s), none came back, and no rank logged `{SYNC_FAILED}`: "
                              "slow, not a deadlock by the log; wait at least ATOM's DP-sync timeout (1800 s) to tell")
    who = next((f"{table[r]}/dp{r}" for r in table if timed_out and r not in timed_out), rack.name)
    check(not findings, "SRV-DEADLOCK", who, "; ".join(findings)
          + (f"; the client saw {out_} of {spread.asked} requests hang with no error" if out_ else ""))
