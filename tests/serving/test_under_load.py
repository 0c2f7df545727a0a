"""SRV-LONGCTX and SRV-DEADLOCK: the server under the loads that broke it on the real rack. They run
after the other serving checks (fixtures/server.py orders them): a failure here can leave the
server dead or stuck."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from fixtures.server import read_logs
from rackgate.atom import logfacts
from rackgate.atom.client import ServerError, refusal
from rackgate.atom.logs import rank_table
from rackgate.gates import lint, serverlogs
from rackgate.report.verdict import check

WORDS = ("river", "stone", "cloud", "north", "glass", "field", "seven", "amber")


def _prompt(words: int, seed: int) -> str:
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(words)) + "\nSummarize the text above."


def _send_all(client, prompts: list[str], max_tokens: int, timeout: float, concurrency: int,
              ranks: list[int] | None = None) -> list[str]:
    """Every request bounded (routed to ranks[i] when given); one problem string per request that
    did not answer 200."""
    def one(i):
        extra = {"data_parallel_rank": ranks[i]} if ranks else {}
        try:
            r = client.completion(prompts[i], max_tokens=max_tokens, timeout=timeout, **extra)
        except ServerError as e:
            return f"dp{ranks[i]}: {e}" if ranks else str(e)
        return "" if r.status == 200 else refusal(r)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return [x for x in pool.map(one, range(len(prompts))) if x]


def _ranks_alive(server, rack) -> list[str]:
    cfg = rack.serving
    table = rank_table(rack)

    def one(r):
        try:
            rep = server.client.completion("The capital of France is", max_tokens=4, timeout=cfg.alive_timeout_s,
                                           data_parallel_rank=r)
        except ServerError as e:
            server.dead_ranks[r] = str(e)
            return f"{table[r]}/dp{r}: {e}"
        return "" if rep.status == 200 else f"{table[r]}/dp{r}: {refusal(rep)}"
    with ThreadPoolExecutor(max_workers=16) as pool:
        return [x for x in pool.map(one, list(table)) if x]


@pytest.mark.row("SRV-LONGCTX")
def test_long_prompts_at_concurrency(server, rack, server_logs, evidence):
    cfg = rack.serving
    cmd = server.command_for(rack.head, 0) if not server.attached else rack.launch.command
    raw = lint.flags(cmd).get("max-num-batched-tokens")
    chunk = int(raw) if raw and raw.isdigit() else lint.ATOM_DEFAULT_BATCHED_TOKENS
    words = int(chunk * cfg.longctx_multiple)
    ranks = list(rank_table(rack))  # one long prompt for every rank: each runs a chunked prefill
    prompts = [_prompt(words, r) for r in ranks]
    problems = _send_all(server.client, prompts, 8, cfg.longctx_timeout_s, cfg.longctx_concurrency, ranks)
    phi = []
    for n, log in server_logs.items():
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


@pytest.mark.row("SRV-DEADLOCK")
def test_no_dp_sync_deadlock(server, rack, server_logs, evidence):
    cfg = rack.serving
    prompts = [_prompt(600, s) for s in range(cfg.deadlock_requests)]
    problems = _send_all(server.client, prompts, 64, cfg.deadlock_window_s, cfg.deadlock_requests)
    table = rank_table(rack)
    timed_out: dict[int, str] = {}
    unlabelled: dict[str, int] = {}
    lines = []
    for n, log in server_logs.items():
        for rec in read_logs(log.grep, "_sync_dp_state failed"):
            err = logfacts.sync_dp_failed(rec.text)
            if err is None:
                continue
            lines.append(f"{log.who(rec)} line {rec.lineno}: {rec.text.strip()[:160]}")
            r = log.rank_of(rec)
            if r is None:
                unlabelled[n] = unlabelled.get(n, 0) + 1
            else:
                timed_out[r] = rec.text.strip()
    evidence.attach("load and _sync_dp_state lines", f"{len(prompts)} requests, {len(problems)} did not complete "
                    f"within {cfg.deadlock_window_s:g}s\n" + "\n".join(lines))
    if unlabelled:
        quiet = [f"{n} (logged {unlabelled.get(n, 0)} timeouts for dp{log.ranks.start}-dp{log.ranks.stop - 1})"
                 for n, log in server_logs.items() if unlabelled.get(n, 0) < len(log.ranks)]
        check(False, "SRV-DEADLOCK", rack.name, f"`_sync_dp_state failed` logged without rank labels "
              f"(launch.rank_labels off); the rank that did not log it is on: {', '.join(quiet) or '?'}")
    findings = serverlogs.deadlock(timed_out, list(table), bool(problems))
    who = next((f"{table[r]}/dp{r}" for r in table if timed_out and r not in timed_out), rack.name)
    check(not findings, "SRV-DEADLOCK", who, "; ".join(findings)
          + (f"; the client saw {len(problems)} of {len(prompts)} requests hang with no error" if problems else ""))
