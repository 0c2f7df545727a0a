"""SRV-CONSISTENCY, SRV-PROFILE: the server's output is the model's, and profiling writes traces.
(SRV-MODELS, SRV-ALIVE and SRV-SANITY are declared: rackgate/gates/srv.py.)"""

import pytest

from rackgate.atom import fanout
from rackgate.atom.client import refusal
from rackgate.atom.logs import rank_table
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import settle, settle_errors
from rackgate.gates import consistency, sanity
from rackgate.probes import traces
from rackgate.report.verdict import check, fail


@pytest.mark.row("SRV-CONSISTENCY")
def test_decode_matches_prefill(server, per_rank, rack, evidence):
    """Every prompt decoded on every DP rank at once, then each decode's cuts prefilled on the rank
    that decoded it (one fan-out): k of n decodes that disagree, named by rank."""
    cfg = rack.serving
    prompts = list(cfg.consistency_prompts)
    dec = per_rank.ask(prompts, cfg.consistency_max_tokens, per_rank=len(prompts),
                       attached=max(len(prompts), cfg.sanity_requests_attached), stream=False, extra={"logprobs": 1})
    evidence.attach("decodes, all ranks", dec.evidence())
    settle(dec, "SRV-CONSISTENCY", server, evidence)
    bad = dec.share(lambda g: (sanity.degenerate(g.text) if g.text.strip() else None) if not g.error else None,
                    "decodes degenerate")
    if bad:
        fail("SRV-SANITY", bad.where or server.url, f"SRV-CONSISTENCY: {bad.line}; decode and prefill cannot be "
             "compared on them")
    refused = dec.failed()
    if refused and len(refused.bad) < len(dec.replied):
        fail("SRV-CONSISTENCY", refused.where or server.url, refused.line)
    empty = dec.share(lambda g: "no text" if not g.error and not g.text.strip() else None, "decodes empty")
    if empty and len(empty.bad) < len(dec.replied):
        fail("SRV-SANITY", empty.where or server.url, f"SRV-CONSISTENCY: {empty.line}")
    decoded = {}
    for g in dec.replied:
        if g.error or not g.text.strip():
            raise CouldNotObserve(f"decode of {g.ask.prompt!r} returned {g.error or 'no text'} (see SRV-SANITY)")
        lp = ((g.body.get("choices") or [{}])[0]).get("logprobs") or {}
        d = consistency.Decoded(g.text, tuple(lp.get("tokens") or ()), tuple(lp.get("top_logprobs") or ()))
        if not consistency.cuts(d, cfg.consistency_positions):
            raise CouldNotObserve(f"decode of {g.ask.prompt!r} returned {d.text[:60]!r} without tokens (no logprobs) "
                                  "and with no boundary-safe place to cut it (a space starting the next word)")
        decoded[id(g)] = (g, d)
    cuts = [fanout.Ask(g.ask.prompt + d.text[:o], g.ask.rank) for g, d in decoded.values()
            for o in consistency.cuts(d, cfg.consistency_positions)]
    pre = per_rank.asks(cuts, 1, stream=False)
    evidence.attach("prefills, on the rank that decoded", pre.evidence())
    settle(pre, "SRV-CONSISTENCY", server, evidence)
    if pre.cancelled or any(g.error for g in pre.got):
        first = next((g.error for g in pre.got if g.error), "not back")
        raise CouldNotObserve(f"{pre.cancelled + sum(1 for g in pre.got if g.error)} of {pre.asked} prefill "
                              f"requests got no answer: {first}")
    prefilled = {(g.ask.prompt, g.ask.rank): g.text for g in pre.got}
    findings: dict[int, list[str]] = {}
    for key, (g, d) in decoded.items():
        def complete(p: str, _n: int, r=g.ask.rank) -> str:
            return str(prefilled[(p, r)])
        found = consistency.judge(g.ask.prompt, d, complete, cfg.consistency_positions)
        if found:
            findings[key] = [f"{g.ask.prompt!r} ({_rank(g)}): {f}" for f in found]
    share = dec.share(lambda g: next(iter(findings.get(id(g), [])), None), "decodes disagree with prefill")
    check(share is None, "SRV-CONSISTENCY", (share.where if share else "") or server.url,
          share.line if share else "")


def _rank(g) -> str:
    return f"dp{g.ask.rank}" if g.ask.rank is not None else "rank not known"


@pytest.mark.row("SRV-PROFILE")
def test_profile_writes_traces(server, per_rank, rack, evidence):
    cfg = rack.serving
    if not cfg.profile_dir:
        pytest.skip("serving.profile_dir is not set in the rack file: profiling is not asked for")
    c = server.client
    started = c.post("/start_profile")
    evidence.attach("POST /start_profile", started.evidence(), "json")
    # the load while profiling: every rank asked (per_rank), at least profile_requests requests
    spread = per_rank.ask(["The capital of France is"], 8, attached=cfg.profile_requests,
                          at_least=cfg.profile_requests, stream=False)
    evidence.attach("completions while profiling, all ranks", spread.evidence())
    settle_errors(spread, "SRV-PROFILE", server, evidence, "POST /v1/completions while profiling")
    stopped = c.post("/stop_profile", timeout=cfg.profile_wait_s + 60)
    evidence.attach("POST /stop_profile", stopped.evidence(), "json")
    if started.status != 200 or stopped.status != 200:
        raise CouldNotObserve(f"/start_profile {refusal(started)}, /stop_profile {refusal(stopped)}")
    table = rank_table(rack)
    logs = server.node_logs()
    want = {r: f"{cfg.profile_dir.rstrip('/')}/dp{r}_tp0" for r in table}
    missing = traces.missing_traces({r: (logs[table[r]].host, d) for r, d in want.items()}, cfg.profile_wait_s)
    evidence.attach("ranks without a trace", "\n".join(f"dp{r}: {d}" for r, d in missing.items()) or "(none)")
    check(not missing, "SRV-PROFILE", ", ".join(sorted({table[r] for r in missing})) or rack.name,
          f"/start_profile answered {started.status} {started.body.get('message')!r}, yet {len(missing)} of "
          f"{len(want)} ranks have no non-empty *.pt.trace.json.gz after {cfg.profile_wait_s:g}s: "
          + ", ".join(f"dp{r}" for r in list(missing)[:8]) + ("…" if len(missing) > 8 else ""))
