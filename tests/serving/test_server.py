"""SRV-MODELS, SRV-SANITY, SRV-CONSISTENCY, SRV-ALIVE, SRV-PROFILE: the server answers, its output is
the model's, every DP rank is alive, and profiling writes traces."""
import time

import pytest

from fixtures.server import name_source
from rackgate.atom.client import ServerError, first_choice, refusal
from rackgate.atom.logs import rank_table
from rackgate.gates import consistency, sanity
from rackgate.probes import traces
from rackgate.report.verdict import CouldNotObserve, check, fail


@pytest.mark.row("SRV-MODELS")
def test_models_lists_served_name(booted, rack, evidence, pytestconfig):
    server = booted
    reply = server.client.models()
    evidence.attach("GET /v1/models", reply.evidence(), "json")
    ids = server.client.model_ids()
    want = server.client.model
    check(want in ids, "SRV-MODELS", server.url,
          f"/v1/models lists {ids}, not the configured served name {want!r} (given by {name_source(pytestconfig)})"
          + (" (a filesystem path)" if any(i.startswith('/') for i in ids) else ""))


@pytest.mark.row("SRV-SANITY")
def test_sanity(server, rack, evidence):
    cfg = rack.serving
    findings = []
    for prompt, expect in cfg.sanity_prompts.items():
        reply = server.client.completion(prompt, max_tokens=cfg.sanity_max_tokens, logprobs=1)
        evidence.attach(f"completion: {prompt}", reply.evidence(), "json")
        choice = first_choice(reply, "/v1/completions")
        lps = tuple((choice.get("logprobs") or {}).get("token_logprobs") or ())
        for why in sanity.judge(sanity.Sample(prompt, choice.get("text") or "", expect, lps), cfg.min_top1_prob):
            findings.append(f"{prompt!r} -> {(choice.get('text') or '')[:60]!r}: {why}")
    check(not findings, "SRV-SANITY", server.url, "; ".join(findings))


@pytest.mark.row("SRV-CONSISTENCY")
def test_decode_matches_prefill(server, rack, evidence):
    cfg = rack.serving
    c = server.client

    def complete(prompt: str, max_tokens: int) -> str:
        return first_choice(c.completion(prompt, max_tokens=max_tokens), "/v1/completions").get("text") or ""

    findings = []
    for prompt in cfg.consistency_prompts:
        reply = c.completion(prompt, max_tokens=cfg.consistency_max_tokens, logprobs=1)
        evidence.attach(f"decode: {prompt}", reply.evidence(), "json")
        choice = first_choice(reply, "/v1/completions")
        lp = choice.get("logprobs") or {}
        d = consistency.Decoded(choice.get("text") or "", tuple(lp.get("tokens") or ()),
                                tuple(lp.get("top_logprobs") or ()))
        if not d.text.strip():
            raise CouldNotObserve(f"decode of {prompt!r} returned no text (see SRV-SANITY)")
        if not consistency.cuts(d, cfg.consistency_positions):
            raise CouldNotObserve(f"decode of {prompt!r} returned {d.text[:60]!r} without tokens (no logprobs) and "
                                  "with no boundary-safe place to cut it (a space starting the next word)")
        findings += [f"{prompt!r}: {f}" for f in consistency.judge(prompt, d, complete, cfg.consistency_positions)]
    check(not findings, "SRV-CONSISTENCY", server.url, "; ".join(findings))


@pytest.mark.row("SRV-ALIVE")
def test_rank_alive(dp_rank, serving, rack, evidence):
    server = serving
    """One real request routed to this DP rank (ATOM's data_parallel_rank hint), bounded."""
    cfg = rack.serving
    node = rank_table(rack)[dp_rank]
    t0 = time.monotonic()
    try:
        reply = server.client.completion("The capital of France is", max_tokens=4, timeout=cfg.alive_timeout_s,
                                         data_parallel_rank=dp_rank)
    except ServerError as e:
        health = _health(server)
        logs = server.node_logs()
        tail = logs[node].tail(15) if node in logs else ""
        evidence.attach(f"last lines of {node}'s log", tail)
        last = next((x for x in reversed(tail.splitlines()) if x.strip()), "")
        server.dead_ranks[dp_rank] = str(e)
        fail("SRV-ALIVE", f"{node}/dp{dp_rank}", f"{e} (after {time.monotonic() - t0:.1f}s); /health answers "
             f"{health}; last line of {node}'s log: {last[:200]!r}")
    evidence.attach(f"completion routed to dp{dp_rank}", reply.evidence(), "json")
    if reply.status in (400, 422) and "data_parallel_rank" in refusal(reply):
        # Not a rack fault and not a pass: per-rank liveness cannot be seen through this server.
        raise CouldNotObserve(f"the server refused ATOM's data_parallel_rank routing hint for dp{dp_rank} "
                              f"(HTTP {reply.status}: {refusal(reply)[:120]}): this rank's liveness cannot be "
                              "observed through it")
    if reply.status != 200:  # refused, not dead: the rank's liveness is not what answered
        raise CouldNotObserve(f"the request routed to dp{dp_rank} was refused: {refusal(reply)}")


def _health(server) -> str:
    try:
        return f"HTTP {server.client.request('GET', '/health', timeout=10).status}"
    except ServerError as e:
        return f"nothing ({e})"


@pytest.mark.row("SRV-PROFILE")
def test_profile_writes_traces(server, rack, evidence):
    cfg = rack.serving
    if not cfg.profile_dir:
        pytest.skip("serving.profile_dir is not set in the rack file: profiling is not asked for")
    c = server.client
    started = c.post("/start_profile")
    evidence.attach("POST /start_profile", started.evidence(), "json")
    for _ in range(cfg.profile_requests):
        first_choice(c.completion("The capital of France is", max_tokens=8), "/v1/completions")
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
