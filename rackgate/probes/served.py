"""What a "server" or "rank" check reads of the session's server (rackgate/gates/declare.py's
scopes): typed facts, read through the server the item hands it (rackgate/server_access.py
`ServerAccess`, as a node's probe reads through `NodeAccess`; rackgate.atom.served.Served implements
it). A probe asks, reads and raises CouldNotObserve when it cannot look; it never judges. A probe
that reads one of the session's runs too takes `rackgate/probes/runs.py` `WithRuns`.

- `models`: GET /v1/models (SRV-MODELS).
- `each_rank`: one request to every DP rank at once (the per-rank mechanism: ATOM's
  data_parallel_rank hint, the hang rule): {rank: Answer}. A "rank" check's probe is usually one
  call of it (`def thing(s: ServerAccess) -> dict[int, Answer]: return each_rank(s, PROMPT, 8)`).
- `alive`: each_rank's request for liveness (SRV-ALIVE); for a rank that did not answer, /health,
  its node's last log line and (launch mode) its stacks.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import CouldNotObserve
from ..server_access import Got, PerRankAccess, Posted, ServerAccess, Spread, Tokens
from . import fit, needle, traces
from .degenerate import degenerate, degenerate_so_far
from .prefill import Decoded, cuts

# The one item of a "rank" check declared with unranked=True where the DP ranks are not known
# (attached without a rack file): its probe answers {UNRANKED: facts} (rackgate/gates/declare.py).
UNRANKED = -1


Server = ServerAccess   # the name "server" probes took the server by (rackgate/server_access.py)


# --- SRV-MODELS ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Models:
    ids: tuple[str, ...]   # what /v1/models lists
    want: str              # the served name the suite asks for
    source: str            # where that name came from, as the user wrote it
    reply: str             # the reply, as evidence


def models(s: ServerAccess) -> Models:
    reply = s.client.models()
    return Models(tuple(s.client.model_ids()), s.client.model, s.name_source, reply.evidence())


# --- one request to every rank -------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """One DP rank's answer to the request routed to it."""
    rank: int
    node: str
    text: str                    # the completion's text (the chat answer's content)
    error: str                   # what came back instead of an answer ('' when answered)
    hung: str                    # the hang as seen, when this rank's request stayed in flight
    finish: str | None = None    # its finish_reason
    reasoning: str = ""          # a chat answer's reasoning_content
    asked: str = ""              # every rank's request, as evidence (the same for every rank)


def hinted(s: ServerAccess) -> PerRankAccess:
    """The per-rank mechanism, when requests can name their rank; CouldNotObserve otherwise (a
    server that refuses ATOM's rank hint: no rank's answer can be told apart)."""
    pr = s.per_rank
    if not pr.routing.hinted:
        raise CouldNotObserve(f"{pr.routing.note or 'the rank hint is not used'}: a DP rank's answer cannot be "
                              "observed through it")
    return pr


def each_rank(s: ServerAccess, prompt: str, max_tokens: int, *, chat: bool = False, stream: bool = False) -> dict[int, Answer]:
    """{rank: its answer} for one request routed to every DP rank at once; a rank whose request
    stayed in flight past the hang bound while others answered is `hung`; a rank of which nothing
    came back is left out (its item could not observe). Nothing back at all: CouldNotObserve."""
    spread = hinted(s).ask([prompt], max_tokens, stream=stream, chat=chat)
    asked, hang, hung = spread.evidence(), spread.hang() or "", set(spread.hung_ranks())
    out = {g.ask.rank: Answer(g.ask.rank, s.table[g.ask.rank], g.text, g.error or "", "", g.finish, g.reasoning, asked)
           for g in spread.got if g.ask.rank in s.table}
    out.update({r: Answer(r, s.table[r], "", "", hang, asked=asked) for r in hung if r in s.table})
    if not out:
        raise CouldNotObserve(spread.nothing_back() or "no answer from any DP rank")
    return out


# --- SRV-ALIVE ----------------------------------------------------------------------------------
ALIVE_PROMPT = "The capital of France is"


@dataclass(frozen=True)
class Alive:
    """One DP rank's answer to the request routed to it."""
    rank: int
    node: str
    answered: bool               # an HTTP answer came back
    status: int | None           # its status (None: nothing came back)
    error: str                   # what came back instead of a completion ('' when fine)
    hung: str                    # the hang as seen, when this rank's request stayed in flight
    body: str = ""               # the completion, as evidence
    health: str = ""             # GET /health, read when the rank did not answer
    log_tail: str = ""           # its node's last log lines, read when the rank did not answer
    stacks: tuple[tuple[str, str], ...] = ()  # (title, text): its stacks (launch mode, hung)
    stacks_said: str = ""        # one line naming what was taken
    asked: str = ""              # every rank's request, as evidence (the same for every rank)


def alive(s: ServerAccess) -> dict[int, Alive]:
    """rank -> its answer. Not observable at all (CouldNotObserve) when the server refuses the rank
    hint: per-rank liveness cannot be seen through it."""
    spread = hinted(s).ask([ALIVE_PROMPT], 4, stream=False, timeout=s.rack.serving.alive_timeout_s)
    asked = spread.evidence()
    hung_ranks = set(spread.hung_ranks())
    hang = spread.hang() or ""
    out: dict[int, Alive] = {}
    for rank, node in s.table.items():
        mine = next((g for g in spread.got if g.ask.rank == rank), None)
        hung = rank in hung_ranks or (mine is None and bool(spread.cancelled))
        if mine is None and not hung:
            continue  # nothing of this rank's came back, nor is it hung: not observed
        answered = mine is not None and mine.replied
        body = json.dumps(mine.body, indent=1)[:20000] if mine is not None else ""
        a = Alive(rank, node, answered, mine.status if answered and mine is not None else None,
                  (mine.error or "") if mine is not None else "", hang if hung else "", body, asked=asked)
        if hung or not answered:
            shown, said = s.stacks([rank]) if hung else ([], "")
            a = Alive(a.rank, a.node, a.answered, a.status, a.error, a.hung, a.body, s.health(),
                      s.log_tail(node), tuple(shown), said, asked)
        out[rank] = a
    if not out:
        raise CouldNotObserve(spread.nothing_back() or "no answer from any DP rank")
    return out


# --- a hang, as every request-sending probe reads it ---------------------------------------------
@dataclass(frozen=True)
class Hang:
    """Requests still in flight past the hang bound while others to the same server came back
    (the hang rule): what was seen, where they were routed and the evidence taken (launch mode:
    the hung ranks' stacks and last log lines)."""
    seen: str                                 # k of n in flight after X s ..., and what evidence was taken
    where: str                                # the ranks / nodes they were routed to (the URL when not known)
    shown: tuple[tuple[str, str], ...] = ()   # (title, text): the requests, the stacks, the log lines
    ranks: tuple[int, ...] = ()               # the hung ranks, where the hint names them


def hang_of(s: ServerAccess, spread: Spread, asker: str) -> Hang | None:
    """The Spread's hang (None: none), with the hung ranks' stacks (rackgate.atom.perrank.Spread)."""
    h = spread.hang()
    if not h:
        return None
    shown, said = s.stacks(spread.hung_ranks())
    return Hang(h + (f"; evidence: {said}" if said else ""), spread.hang_where(s.url),
                ((f"{asker}: requests in flight and answered", spread.evidence()), *shown), tuple(spread.hung_ranks()))


# --- SRV-SANITY ----------------------------------------------------------------------------------
PREFLIGHT_PROMPT = "The capital of France is"


@dataclass(frozen=True)
class Reply:
    """One sanity prompt's streamed answer (cut at the first sign of a degenerate one: `stopped`)."""
    prompt: str
    text: str
    stopped: str | None
    rank: int | None
    node: str | None


@dataclass(frozen=True)
class Whole:
    """One sanity prompt asked whole, non-streamed, with logprobs (when the server gives them)."""
    prompt: str
    text: str
    token_logprobs: tuple[float, ...]
    error: str                   # what came back instead of an answer ('' when answered)


@dataclass(frozen=True)
class Sanity:
    url: str
    asked: int                                # the streamed prompts asked (every rank's)
    replies: tuple[Reply, ...] = ()           # the streamed answers back without an error
    hang: Hang | None = None                  # the first hang seen (the preflight's, the streamed or whole read's)
    blind: str = ""                           # why nothing could be read ('' when something came back)
    refused: tuple[str, str, int, str] | None = None  # (line, where, k refused, the first error) of the answers back
    replied: int = 0                          # the streamed answers back, refused ones included
    whole: tuple[Whole, ...] = ()             # read only when the streamed answers left nothing to say
    note: str = ""                            # how the requests were routed, when the hint is not used
    shown: tuple[tuple[str, str, str], ...] = ()  # (title, text, kind): what was asked and answered


def _decisive(g: Got) -> bool:
    return bool(g.stopped or (not g.error and degenerate(g.text)))


def sanity(s: ServerAccess) -> Sanity:
    """SRV-SANITY's reads: every rank asked for one token first (the hang bound is then the floor:
    a rank that does not answer is seen one floor after the others answered); then the short
    prompts to every rank at once (two per rank by the hint; attached without a rack file,
    sanity_requests_attached spread by the server), streamed and cut at the first sign of a
    degenerate answer; then, only when those answers left nothing to say, the prompts asked whole
    with logprobs. Each read stops at a hang."""
    cfg, pr = s.rack.serving, s.per_rank
    pre = pr.ask([PREFLIGHT_PROMPT], 1, stream=False)
    shown: list[tuple[str, str, str]] = [("SRV-SANITY: every rank asked once", pre.evidence(), "text")]
    hang = hang_of(s, pre, "SRV-SANITY")
    if hang or pre.nothing_back():
        return Sanity(s.url, pre.asked, hang=hang, blind=pre.nothing_back() or "", shown=tuple(shown))
    spread = pr.ask(list(cfg.sanity_prompts), cfg.sanity_max_tokens, per_rank=cfg.sanity_per_rank,
                    attached=cfg.sanity_requests_attached, stop_when=degenerate_so_far,
                    settle_s=cfg.sanity_settle_s, decisive=_decisive)
    shown.append(("answers, all ranks", spread.evidence(), "text"))
    replies = tuple(Reply(g.ask.prompt, g.text, g.stopped, g.ask.rank,
                          s.table.get(g.ask.rank) if g.ask.rank is not None else None)
                    for g in spread.replied if not g.error)
    refused = spread.failed()
    read = Sanity(s.url, spread.asked, replies, hang_of(s, spread, "SRV-SANITY"), spread.nothing_back() or "",
                  (refused.line, refused.where, len(refused.bad), refused.bad[0].error or "") if refused else None,
                  len(spread.replied), note=pr.routing.note, shown=tuple(shown))
    if read.hang or read.blind or refused or any(r.stopped or degenerate(r.text) for r in replies):
        return read
    whole = pr.each(list(cfg.sanity_prompts), cfg.sanity_max_tokens, stream=False, extra={"logprobs": 1})
    got = []
    for g in whole.got:
        body = json.dumps(g.body, indent=1)[:20000]
        shown.append((f"completion: {g.ask.prompt}", body, "json"))
        lps = (((g.body.get("choices") or [{}])[0]).get("logprobs") or {}).get("token_logprobs") or ()
        got.append(Whole(g.ask.prompt, g.text, tuple(lps), g.error or ""))
    return dataclasses.replace(read, hang=hang_of(s, whole, "SRV-SANITY"), blind=whole.nothing_back() or "",
                               whole=tuple(got), shown=tuple(shown))


# --- SRV-CONSISTENCY -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Consistency:
    url: str
    decodes: Spread                           # the decodes as read (words its shares)
    decoded: tuple[tuple[int, Decoded], ...] = ()  # (index in decodes.got, the decode) for each one cut
    prefilled: tuple[tuple[str, int | None, str], ...] = ()  # (prompt + decoded prefix, rank, prefill's next token)
    hang: Hang | None = None                  # the decodes' hang, or the prefills'
    blind: str = ""                           # why nothing (or no prefill) could be read
    shown: tuple[tuple[str, str], ...] = ()   # (title, text)


def _decoded(g: Got) -> Decoded:
    lp = ((g.body.get("choices") or [{}])[0]).get("logprobs") or {}
    return Decoded(g.text, tuple(lp.get("tokens") or ()), tuple(lp.get("top_logprobs") or ()))


def consistency(s: ServerAccess) -> Consistency:
    """SRV-CONSISTENCY's reads: every prompt decoded greedily on every DP rank at once, then each
    decode's cuts (`prefill.cuts`) prefilled for one token on the rank that decoded it (one
    fan-out). The prefills are asked only when every decode came back with text to cut."""
    cfg, pr = s.rack.serving, s.per_rank
    prompts = list(cfg.consistency_prompts)
    dec = pr.ask(prompts, cfg.consistency_max_tokens, per_rank=len(prompts),
                 attached=max(len(prompts), cfg.sanity_requests_attached), stream=False, extra={"logprobs": 1})
    shown = [("decodes, all ranks", dec.evidence())]
    read = Consistency(s.url, dec, hang=hang_of(s, dec, "SRV-CONSISTENCY"), blind=dec.nothing_back() or "",
                       shown=tuple(shown))
    if read.hang or read.blind or any(g.error or not g.text.strip() or degenerate(g.text) for g in dec.replied):
        return read
    decoded = tuple((i, _decoded(g)) for i, g in enumerate(dec.got) if g.replied)
    if any(not cuts(d, cfg.consistency_positions) for _, d in decoded):
        return dataclasses.replace(read, decoded=decoded)
    asks = [(dec.got[i].ask.prompt + d.text[:o], dec.got[i].ask.rank) for i, d in decoded
            for o in cuts(d, cfg.consistency_positions)]
    pre = pr.on(asks, 1, stream=False)
    shown.append(("prefills, on the rank that decoded", pre.evidence()))
    blind = ""
    if pre.cancelled or any(g.error for g in pre.got):
        first = next((g.error for g in pre.got if g.error), "not back")
        blind = (f"{pre.cancelled + sum(1 for g in pre.got if g.error)} of {pre.asked} prefill requests got no "
                 f"answer: {first}")
    return dataclasses.replace(read, decoded=decoded, hang=hang_of(s, pre, "SRV-CONSISTENCY"),
                               blind=pre.nothing_back() or blind, shown=tuple(shown),
                               prefilled=tuple((g.ask.prompt, g.ask.rank, g.text) for g in pre.got))


# --- SRV-STREAM-CONSISTENCY ----------------------------------------------------------------------
@dataclass(frozen=True)
class Said:
    """One answer as the server gave it, streamed or not, with its tokens counted by the served
    model's tokenizer (`ServerAccess.tokens()`)."""
    text: str
    finish: str | None
    usage: int | None                         # usage.completion_tokens as the server reported it
    tokens: int                               # the text's tokens, counted here
    specials: tuple[tuple[int, str], ...]     # (offset, token) of each special token written out
    error: str = ""
    pieces: tuple[str, ...] = ()              # streamed: each chunk's text


@dataclass(frozen=True)
class Streams:
    url: str
    plain: Spread                             # the non-streamed answers as read (words the share)
    pairs: tuple[tuple[int, Said, Said], ...] = ()  # (index in plain.got, not streamed, streamed)
    hang: Hang | None = None
    blind: str = ""                           # why the answers cannot be compared
    shown: tuple[tuple[str, str], ...] = ()


def _said(g: Got, usage: Any, tok: Tokens) -> Said:
    u = (usage or {}).get("completion_tokens")
    return Said(g.text, g.finish, u, tok.count(g.text), tuple(tok.specials_in(g.text)), g.error or "",
                tuple(g.body.get("pieces") or ()))


def streams(s: ServerAccess) -> Streams:
    """SRV-STREAM-CONSISTENCY's reads: each prompt asked of every rank not streamed, then the same
    asks streamed, all at once each time (the served model's tokenizer loaded first: without it
    the counts cannot be checked)."""
    cfg, pr = s.rack.serving, s.per_rank
    tok = s.tokens()
    prompts, n = list(cfg.stream_prompts), cfg.stream_max_tokens
    plain = pr.ask(prompts, n, per_rank=len(prompts), attached=max(len(prompts), cfg.sanity_requests_attached),
                   stream=False)
    shown = [("not streamed, all ranks", plain.evidence())]
    read = Streams(s.url, plain, hang=hang_of(s, plain, "SRV-STREAM-CONSISTENCY"), blind=plain.nothing_back() or "",
                   shown=tuple(shown))
    if read.hang or read.blind:
        return read
    streamed = pr.asks([g.ask for g in plain.got], n, stream=True)
    shown.append(("streamed, all ranks", streamed.evidence()))
    blind = streamed.nothing_back() or ""
    if not blind and (plain.cancelled or streamed.cancelled):
        blind = (f"{plain.cancelled + streamed.cancelled} of {plain.asked + streamed.asked} requests not back within "
                 "the request timeout")
    pairs = tuple((i, _said(p, p.body.get("usage"), tok), _said(q, q.body.get("server_usage"), tok))
                  for i, (p, q) in enumerate(zip(plain.got, streamed.got)))
    return dataclasses.replace(read, pairs=pairs, hang=hang_of(s, streamed, "SRV-STREAM-CONSISTENCY"), blind=blind,
                               shown=tuple(shown))


# --- SRV-PROFILE ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Profiled:
    """The session's one profiling run (the same for every rank's item) and this rank's trace."""
    rank: int
    node: str
    trace_dir: str                            # <profile_dir>/dp<r>_tp0
    traced: bool | None                       # a non-empty trace there (None: not looked for)
    started: Posted                           # /start_profile's answer
    stopped: Posted | None = None             # /stop_profile's answer (None: not asked)
    hang: Hang | None = None                  # the load's hang
    blind: str = ""                           # why the load's answers cannot be read
    refused: tuple[str, str, int, int, str] | None = None  # (line, where, k refused, n back, first error)
    shown: tuple[tuple[str, str, str], ...] = ()


def profiles(s: ServerAccess) -> dict[int, Profiled]:
    """SRV-PROFILE's one run: /start_profile, a little load (every rank asked, at least
    serving.profile_requests requests), /stop_profile, then each rank's trace directory polled for
    a non-empty trace until all have one or serving.profile_wait_s is over."""
    cfg = s.rack.serving
    started = s.post("/start_profile")
    spread = s.per_rank.ask([PREFLIGHT_PROMPT], 8, attached=cfg.profile_requests, at_least=cfg.profile_requests,
                            stream=False)
    shown = [("POST /start_profile", started.evidence, "json"),
             ("completions while profiling, all ranks", spread.evidence(), "text")]
    want = {r: f"{cfg.profile_dir.rstrip('/')}/dp{r}_tp0" for r in s.table}
    refused = spread.failed()
    run = Profiled(-1, "", "", None, started, hang=hang_of(s, spread, "SRV-PROFILE"), blind=spread.nothing_back() or "",
                   refused=(refused.line, refused.where, len(refused.bad), len(spread.replied),
                            refused.bad[0].error or "") if refused else None)
    if run.hang or run.blind or refused:
        return {r: dataclasses.replace(run, rank=r, node=n, trace_dir=want[r], shown=tuple(shown))
                for r, n in s.table.items()}
    stopped = s.post("/stop_profile", timeout=cfg.profile_wait_s + 60)
    shown.append(("POST /stop_profile", stopped.evidence, "json"))
    missing: dict[int, str] = {}
    if started.status == 200 and stopped.status == 200:
        hosts = {r: s.host(n) for r, n in s.table.items()}
        unseen = sorted(r for r, h in hosts.items() if h is None)
        if unseen:
            raise CouldNotObserve(f"no node to read the traces of dp{unseen[0]} on (its server log is not known)")
        missing = traces.missing_traces({r: (h, want[r]) for r, h in hosts.items() if h is not None},
                                        cfg.profile_wait_s)
        shown.append(("ranks without a trace", "\n".join(f"dp{r}: {d}" for r, d in missing.items()) or "(none)",
                      "text"))
    return {r: dataclasses.replace(run, rank=r, node=n, trace_dir=want[r], stopped=stopped,
                                   traced=(r not in missing) if started.status == 200 == stopped.status else None,
                                   shown=tuple(shown))
            for r, n in s.table.items()}


# --- SRV-LONGCTX ---------------------------------------------------------------------------------
PHI = "PHINode::setIncomingValue"


@dataclass(frozen=True)
class LongCtx:
    url: str
    load: Spread                              # the long prompts as read (words its shares)
    phi: tuple[str, ...] = ()                 # the logs' PHINode::setIncomingValue lines
    hang: Hang | None = None                  # the long prompts' hang
    after: Spread | None = None               # one short request to every rank afterwards
    shown: tuple[tuple[str, str], ...] = ()
    needles: Mapping[str, needle.Needle] = dataclasses.field(default_factory=dict)  # prompt -> its needle


def _long_degenerate(g: Got) -> bool:
    return bool(g.stopped or (not g.error and g.replied and degenerate(g.text)))


def _sized(s: ServerAccess, words: int, size: str) -> tuple[int, str]:
    """The long prompt cut to fit the model's length where the server or the rack file says it."""
    max_len, where = s.max_model_len()
    fitted, cut = fit.fitting_words(words, LONGCTX_ANSWER_TOKENS, max_len)
    return fitted, (f"{size}, cut to fit max_model_len {max_len} ({where})" if cut else size)


LONGCTX_ANSWER_TOKENS = 8


def longctx(s: ServerAccess) -> LongCtx:
    """SRV-LONGCTX's reads: one long prompt for every DP rank (each runs a chunked prefill: a
    multiple of --max-num-batched-tokens, or serving.longctx_words), at least longctx_concurrency at
    once; the logs' PHINode::setIncomingValue lines; then one short request to every rank: still
    there? A degenerate answer stops the reading (SRV-SANITY's, said at once)."""
    cfg, pr = s.rack.serving, s.per_rank
    chunk, said = s.batched_tokens()
    words = cfg.longctx_words or int(chunk * cfg.longctx_multiple)
    size = "serving.longctx_words" if cfg.longctx_words else f"{cfg.longctx_multiple:g} x {said}"
    words, size = _sized(s, words, size)
    n = max(len(s.table), cfg.longctx_concurrency)
    needles = [needle.needle(words, i) for i in range(n)]
    spread = pr.ask([x.prompt for x in needles], LONGCTX_ANSWER_TOKENS, attached=cfg.longctx_concurrency,
                    at_least=cfg.longctx_concurrency, timeout=cfg.longctx_timeout_s, stop_when=degenerate_so_far,
                    decisive=_long_degenerate)
    shown = [("long-prompt load", f"{spread.asked} prompts of ~{words} tokens ({size}), all at once, each a "
                                  "needle in a haystack (its number asked at the end)\n" + "\n".join(
                                      f"needle {x.value} at {x.depth:.0%}" for x in needles) + f"\n{spread.evidence()}")]
    read = LongCtx(s.url, spread, shown=tuple(shown), needles={x.prompt: x for x in needles})
    if any(g.stopped or (not g.error and degenerate(g.text)) for g in spread.replied):
        return read
    phi = tuple(s.grep(PHI))
    shown.append((f"{PHI} lines", "\n".join(phi) or "(none)"))
    read = dataclasses.replace(read, phi=phi, hang=hang_of(s, spread, "SRV-LONGCTX"), shown=tuple(shown))
    if read.hang or spread.nothing_back():
        return read
    after = pr.ask([PREFLIGHT_PROMPT], 4, stream=False, timeout=cfg.alive_timeout_s)
    shown.append(("one short request to every rank afterwards", after.evidence()))
    return dataclasses.replace(read, after=after, shown=tuple(shown))
