"""SRV-MODELS, SRV-SANITY, SRV-CONSISTENCY, SRV-ALIVE, SRV-PROFILE: the server answers, its output is
the model's, every DP rank is alive, and profiling writes traces."""
import time

import pytest

from rackgate.atom import fanout
from rackgate.atom.client import ServerError, first_choice, refusal
from rackgate.atom.logs import rank_table
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import name_source
from rackgate.gates import consistency, sanity
from rackgate.probes import traces
from rackgate.report.verdict import check, fail


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
    """Short prompts to every DP rank at once (two per rank, named by ATOM's data_parallel_rank hint;
    attached without a rack file: sanity_requests_attached, spread by the server), streamed and cut
    at the first sign of a degenerate answer; then the few prompts with logprobs, judged whole."""
    cfg = rack.serving
    table = rank_table(rack)
    spread = _spread(server, cfg, table)
    evidence.attach("answers, all ranks", _answers_text(spread))
    answers = [_answer(g, table) for g in spread.got]
    refused = [g for g in spread.got if g.error]
    if any(a.why for a in answers):
        check(False, "SRV-SANITY", sanity.blamed(answers) or server.url, sanity.share(answers, spread.asked))
    if refused:
        raise CouldNotObserve(f"{len(refused)} of {spread.asked} sanity prompts got no answer: {refused[0].error}")
    findings = [f"{a.prompt!r} -> {a.text[:60]!r} ({a.where()}): incoherent: expected {cfg.sanity_prompts[a.prompt]!r}"
                for a in answers if cfg.sanity_prompts[a.prompt].lower() not in a.text.lower()]
    for prompt, expect in cfg.sanity_prompts.items():
        reply = server.client.completion(prompt, max_tokens=cfg.sanity_max_tokens, logprobs=1)
        evidence.attach(f"completion: {prompt}", reply.evidence(), "json")
        choice = first_choice(reply, "/v1/completions")
        lps = tuple((choice.get("logprobs") or {}).get("token_logprobs") or ())
        for why in sanity.judge(sanity.Sample(prompt, choice.get("text") or "", expect, lps), cfg.min_top1_prob):
            findings.append(f"{prompt!r} -> {(choice.get('text') or '')[:60]!r}: {why}")
    check(not findings, "SRV-SANITY", server.url, "; ".join(findings[:6]) + (f" (+{len(findings) - 6} more)"
                                                                              if len(findings) > 6 else ""))


def _spread(server, cfg, table):
    """Two prompts per DP rank, each naming its rank where the server takes ATOM's hint (else
    spread by the server); attached without a rack file, sanity_requests_attached prompts."""
    prompts = list(cfg.sanity_prompts)
    hinted = fanout.takes_rank_hint(server.client, len(table), cfg.request_timeout_s)
    ranks = [r for r in table for _ in range(cfg.sanity_per_rank)] if table else \
        [None] * cfg.sanity_requests_attached
    asks = [fanout.Ask(prompts[i % len(prompts)], r if hinted else None) for i, r in enumerate(ranks)]
    return fanout.fan_out(server.client, asks, cfg.sanity_max_tokens, cfg.request_timeout_s,
                          stop_when=sanity.degenerate_so_far, settle_s=cfg.sanity_settle_s,
                          decisive=lambda g: bool(g.stopped or (not g.error and sanity.degenerate(g.text))))


def _answer(g, table) -> sanity.Answer:
    why = None if g.error else (g.stopped or sanity.degenerate(g.text))
    r = g.ask.rank
    return sanity.Answer(g.ask.prompt, g.text, why, r, table.get(r) if r is not None else None)


def _answers_text(spread) -> str:
    return (f"{spread.asked} asked, {len(spread.got)} back, {spread.cancelled} cancelled, {spread.seconds:.1f}s\n"
            + "\n".join(f"dp{g.ask.rank if g.ask.rank is not None else '?'}\t{g.seconds:.1f}s\t{g.ask.prompt!r}"
                        f"\t{g.error or repr(g.text[:80])}" + (f"\tstopped: {g.stopped}" if g.stopped else "")
                        for g in spread.got))


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
        why = sanity.degenerate(d.text) if d.text.strip() else None
        if why:
            fail("SRV-SANITY", server.url, f"SRV-CONSISTENCY's decode of {prompt!r} is degenerate: {d.text[:48]!r}: "
                 f"{why}; decode and prefill cannot be compared on it")
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
