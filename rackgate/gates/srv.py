"""SRV judgments over what the server answered (rackgate/probes/served.py), and their declarations
(rackgate/gates/declare.py: "server" and "rank" scopes)."""
from __future__ import annotations

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import needle, served
from . import consistency, sanity, stream
from .declare import Check, Finding, Ranked, Shown, declare, ranked


# --- SRV-MODELS ---------------------------------------------------------------------------------
def model_served(m: served.Models, rack: Rack, where: str) -> list[str]:
    """The served name the suite asks for is one /v1/models lists."""
    if m.want in m.ids:
        return []
    path = " (a filesystem path)" if any(i.startswith("/") for i in m.ids) else ""
    return [f"/v1/models lists {list(m.ids)}, not the configured served name {m.want!r} (given by {m.source}){path}"]


def models_shown(m: served.Models, rack: Rack) -> list[Shown]:
    return [Shown("GET /v1/models", m.reply, "json")]


declare(Check("SRV-MODELS", "server", probe=served.models, judge=model_served, shows=models_shown))


# --- a hang, whichever row's requests saw it ------------------------------------------------------
DEADLOCK_SIGNATURE = " (SRV-DEADLOCK's signature: a rank that accepts requests and never answers)"
DEADLOCK_MEANS = ("requests in flight with no error while the others to the same server came back: a rank (or a "
                  "node's ranks) accepts requests and never answers -- stuck in a collective one participant never "
                  "joined, or its engine loop; every request the router hands it hangs")


def finding_at(row: str, where: str, seen: str, means: str = "", also: tuple[str, ...] = ()) -> list[str]:
    """A judge's one finding of `row` at `where` (another row's, or this row's at a narrower place
    than the item's): the item fails there (gates/declare.py Finding)."""
    return [Finding(seen, row=row, where=where, means=means, also=also)]


def hang_finding(row: str, hang: str, where: str, own: str | None = None) -> list[str]:
    """The hang rule's verdict on requests `row` sent (`hang`: what was seen, k of n in flight past
    the bound while the others came back): SRV-DEADLOCK's FAILED naming the asking row -- or, with
    `own` (what else that row saw), the asking row's FAILED cross-referenced to SRV-DEADLOCK and
    recorded for it too (`also`). Either way the checks after it are not run, naming the hang."""
    if own is not None:
        return finding_at(row, where, f"{own}{'; ' if own else ''}{hang}{DEADLOCK_SIGNATURE}", also=("SRV-DEADLOCK",))
    return finding_at("SRV-DEADLOCK", where, f"{row}'s requests: {hang}", DEADLOCK_MEANS)


# --- SRV-ALIVE ----------------------------------------------------------------------------------


def rank_answers(r: Ranked[served.Alive], rack: Rack, where: str) -> list[str]:
    """This rank answered its request: a request that stayed in flight past the hang bound while
    others answered, or one the server could not answer at all, is the rank's FAILED; a refusal
    (an HTTP error status) says nothing of its liveness (could not observe)."""
    a = r.mine
    if a.hung or not a.answered:
        seen = (a.hung + (f"; evidence: {a.stacks_said}" if a.stacks_said else "")) if a.hung else a.error
        last = next((x for x in reversed(a.log_tail.splitlines()) if x.strip()), "")
        return [f"{seen}; /health answers {a.health}; last line of {a.node}'s log: {last[:200]!r}"
                + (DEADLOCK_SIGNATURE if a.hung else "")]
    if a.status != 200:
        raise CouldNotObserve(f"the request routed to dp{a.rank} was refused: {a.error}")
    return []


def alive_shown(r: Ranked[served.Alive], rack: Rack) -> list[Shown]:
    a = r.ranks.get(r.rank)
    if a is None:
        return []
    out = [Shown("one request to every rank", a.asked)]
    if a.hung or not a.answered:
        out.append(Shown(f"last lines of {a.node}'s log", a.log_tail))
        out += [Shown(title, text) for title, text in a.stacks]
    else:
        out.append(Shown(f"completion routed to dp{a.rank}", a.body, "json"))
    return out


declare(ranked("SRV-ALIVE", probe=served.alive, judge=rank_answers, shows=alive_shown))


# --- SRV-SANITY ---------------------------------------------------------------------------------
def answers_sane(f: served.Sanity, rack: Rack, where: str) -> list[str]:
    """The server's answers are a model's: a degenerate share is FAILED where it came from (a node,
    ranks of a node; the server when every answer or no rank is known), a hang is SRV-DEADLOCK's, a
    refused share is FAILED while others were answered (every one refused: could not observe); then
    each answer coherent (its expected word) and, asked whole, not near-uniform in its logprobs."""
    cfg = rack.serving
    answers = [sanity.Answer(r.prompt, r.text, r.stopped or sanity.degenerate(r.text), r.rank, r.node)
               for r in f.replies]
    if any(a.why for a in answers):
        return finding_at("SRV-SANITY", sanity.blamed(answers) or where,
                      sanity.share(answers, f.asked) + (f"; {f.note}" if f.note else ""))
    if f.hang is not None:
        return hang_finding("SRV-SANITY", f.hang.seen, f.hang.where)
    if f.blind:
        raise CouldNotObserve(f.blind)
    if f.refused is not None:
        line, at, k, first = f.refused
        if k < f.replied:
            return finding_at("SRV-SANITY", at or where, line)
        raise CouldNotObserve(f"{k} of {f.asked} sanity prompts got no answer: {first}")
    findings = [f"{a.prompt!r} -> {a.text[:60]!r} ({a.where()}): incoherent: expected {cfg.sanity_prompts[a.prompt]!r}"
                for a in answers if cfg.sanity_prompts[a.prompt].lower() not in a.text.lower()]
    for w in f.whole:
        if w.error:
            raise CouldNotObserve(f"POST /v1/completions ({w.prompt!r}, logprobs): {w.error}")
        sample = sanity.Sample(w.prompt, w.text, cfg.sanity_prompts[w.prompt], w.token_logprobs)
        findings += [f"{w.prompt!r} -> {w.text[:60]!r}: {why}" for why in sanity.judge(sample, cfg.min_top1_prob)]
    return findings[:6] + ([f"(+{len(findings) - 6} more)"] if len(findings) > 6 else [])


def read_shown(f: served.Sanity | served.Consistency | served.Streams | served.Profiled | served.LongCtx,
               rack: Rack) -> list[Shown]:
    """What a request-sending check asked and what came back, and a hang's evidence (the stacks)."""
    return ([Shown(*shown) for shown in f.shown]
            + [Shown(title, text) for title, text in (f.hang.shown if f.hang is not None else ())])


declare(Check("SRV-SANITY", "server", probe=served.sanity, judge=answers_sane, shows=read_shown))


# --- SRV-CONSISTENCY ----------------------------------------------------------------------------
def decode_agrees(f: served.Consistency, rack: Rack, where: str) -> list[str]:
    """Each greedy decode is what prefill of the prompt plus its prefix continues with, on the rank
    that decoded it: k of n decodes that disagree, named by rank. A degenerate or empty share of
    the decodes is SRV-SANITY's finding (decode and prefill cannot be compared on them), a refused
    share this row's; a hang is SRV-DEADLOCK's."""
    if f.hang is not None:
        return hang_finding("SRV-CONSISTENCY", f.hang.seen, f.hang.where)
    dec = f.decodes
    if f.blind and not dec.replied:  # nothing came back
        raise CouldNotObserve(f.blind)
    bad = dec.share(lambda g: (sanity.degenerate(g.text) if g.text.strip() else None) if not g.error else None,
                    "decodes degenerate")
    if bad:
        return finding_at("SRV-SANITY", bad.where or where, f"SRV-CONSISTENCY: {bad.line}; decode and prefill cannot be "
                      "compared on them")
    refused = dec.failed()
    if refused and len(refused.bad) < len(dec.replied):
        return finding_at("SRV-CONSISTENCY", refused.where or where, refused.line)
    empty = dec.share(lambda g: "no text" if not g.error and not g.text.strip() else None, "decodes empty")
    if empty and len(empty.bad) < len(dec.replied):
        return finding_at("SRV-SANITY", empty.where or where, f"SRV-CONSISTENCY: {empty.line}")
    for g in dec.replied:
        if g.error or not g.text.strip():
            raise CouldNotObserve(f"decode of {g.ask.prompt!r} returned {g.error or 'no text'} (see SRV-SANITY)")
    positions = rack.serving.consistency_positions
    for i, d in f.decoded:
        if not consistency.cuts(d, positions):
            raise CouldNotObserve(f"decode of {dec.got[i].ask.prompt!r} returned {d.text[:60]!r} without tokens (no "
                                  "logprobs) and with no boundary-safe place to cut it (a space starting the next word)")
    if f.blind:
        raise CouldNotObserve(f.blind)
    prefilled = {(p, r): text for p, r, text in f.prefilled}
    found: dict[int, str] = {}
    for i, d in f.decoded:
        g = dec.got[i]

        def complete(p: str, _n: int, r: int | None = g.ask.rank) -> str:
            return prefilled[(p, r)]
        said = consistency.judge(g.ask.prompt, d, complete, positions)
        if said:
            found[id(g)] = f"{g.ask.prompt!r} ({f'dp{g.ask.rank}' if g.ask.rank is not None else 'rank not known'}): {said[0]}"
    share = dec.share(lambda g: found.get(id(g)), "decodes disagree with prefill")
    if share is not None:
        return finding_at("SRV-CONSISTENCY", share.where or where, share.line)
    return []


declare(Check("SRV-CONSISTENCY", "server", probe=served.consistency, judge=decode_agrees, shows=read_shown))


# --- SRV-STREAM-CONSISTENCY ---------------------------------------------------------------------
def streams_agree(f: served.Streams, rack: Rack, where: str) -> list[str]:
    """Each greedy answer is the same streamed and not, and the server's usage count, end of
    sequence and finish_reason agree with it (gates/stream.py), on every rank: k of n answers that
    disagree, named by rank; a hang is SRV-DEADLOCK's."""
    if f.hang is not None:
        return hang_finding("SRV-STREAM-CONSISTENCY", f.hang.seen, f.hang.where)
    if f.blind:
        raise CouldNotObserve(f.blind)
    n = rack.serving.stream_max_tokens
    found: dict[int, str] = {}
    for i, a, b in f.pairs:
        g = f.plain.got[i]
        if a.error or b.error:
            raise CouldNotObserve(f"{g.ask.prompt!r}: {a.error or b.error}")
        counts = {a.text: a.tokens, b.text: b.tokens}
        specials = {a.text: list(a.specials), b.text: list(b.specials)}
        said = stream.judge(stream.Answer("not streamed", a.text, a.finish, a.usage),
                            stream.Answer("streamed", b.text, b.finish, b.usage, b.pieces), n,
                            counts.__getitem__, specials.__getitem__)
        if said:
            at = f"dp{g.ask.rank}" if g.ask.rank is not None else "rank not known"
            found[id(g)] = f"{g.ask.prompt!r} ({at}): " + "; ".join(said)
    if not found and all(a.usage is None and b.usage is None for _, a, b in f.pairs):
        raise CouldNotObserve(f"{f.url} reported no usage.completion_tokens, streamed or not: the count cannot be "
                              "checked")
    share = f.plain.share(lambda g: found.get(id(g)), "answers disagree streamed and not")
    if share is not None:
        return finding_at("SRV-STREAM-CONSISTENCY", share.where or where, share.line)
    return []


declare(Check("SRV-STREAM-CONSISTENCY", "server", probe=served.streams, judge=streams_agree, shows=read_shown))


# --- SRV-PROFILE --------------------------------------------------------------------------------
def rank_traced(r: Ranked[served.Profiled], rack: Rack, where: str) -> list[str]:
    """This rank wrote a non-empty trace after /start_profile, a little load and /stop_profile
    answered 200. The load's hang is SRV-DEADLOCK's on the hung ranks (the others' traces are not
    looked for); a refused share of it is this row's FAILED; profiling refused is could not observe."""
    p = r.mine
    if p.hang is not None:
        if r.rank in p.hang.ranks or not p.hang.ranks:
            return hang_finding("SRV-PROFILE", p.hang.seen, p.hang.where)
        raise CouldNotObserve(f"the load while profiling hung at {p.hang.where} (see SRV-DEADLOCK): dp{r.rank}'s "
                              "trace was not looked for")
    if p.blind:
        raise CouldNotObserve(p.blind)
    if p.refused is not None:
        line, at, k, n, first = p.refused
        if k < n:
            return finding_at("SRV-PROFILE", at or where, line)
        raise CouldNotObserve(f"POST /v1/completions while profiling: {first}")
    if p.traced is None:
        raise CouldNotObserve(f"/start_profile {p.started.refusal}, /stop_profile "
                              f"{p.stopped.refusal if p.stopped is not None else 'not asked'}")
    if p.traced:
        return []
    missing = sorted(q.rank for q in r.ranks.values() if q.traced is False)
    return [f"/start_profile answered {p.started.status} {p.started.body.get('message')!r}, yet dp{r.rank} has no "
            f"non-empty *.pt.trace.json.gz in {p.trace_dir} after {rack.serving.profile_wait_s:g}s ({len(missing)} of "
            f"{len(r.ranks)} ranks have none: " + ", ".join(f"dp{q}" for q in missing[:8])
            + ("…" if len(missing) > 8 else "") + ")"]


def profile_shown(r: Ranked[served.Profiled], rack: Rack) -> list[Shown]:
    p = r.ranks.get(r.rank)
    return read_shown(p, rack) if p is not None else []


def profile_asked(rack: Rack) -> str:
    return "" if rack.serving.profile_dir else ("serving.profile_dir is not set in the rack file: profiling is not "
                                                "asked for")


declare(ranked("SRV-PROFILE", probe=served.profiles, judge=rank_traced, shows=profile_shown, applies=profile_asked))


# --- SRV-LONGCTX --------------------------------------------------------------------------------
def long_prompts_served(f: served.LongCtx, rack: Rack, where: str) -> list[str]:
    """Long prompts at concurrency are answered right and the engine is still there afterwards: a
    degenerate answer is SRV-SANITY's; a hang, the PHINode assertion, an error share, answers that
    miss their needle's value (probes/needle.py) or requests that hang afterwards are this row's (a
    hang cross-referenced to SRV-DEADLOCK and recorded for it)."""
    spread = f.load
    bad = spread.share(lambda g: g.stopped or (sanity.degenerate(g.text) if not g.error else None),
                       "answers degenerate")
    if bad:
        return finding_at("SRV-SANITY", bad.where or where, f"SRV-LONGCTX's load: {bad.line}")
    seen = [f"PHINode::setIncomingValue assertion: {f.phi[0]}"] if f.phi else []
    if f.hang is not None:
        return hang_finding("SRV-LONGCTX", f.hang.seen, f.hang.where, own="; ".join(seen))
    if spread.nothing_back():
        raise CouldNotObserve(spread.nothing_back())
    failed = spread.failed()
    if failed:
        seen.append(f"long prompts: {failed.line}")
    wrong = spread.share(lambda g: needle.missed(g.text, f.needles[g.ask.prompt])
                         if not g.error and g.ask.prompt in f.needles else None, "long answers miss the needle")
    if wrong:
        seen.append(f"the needle's value: {wrong.line}")
    after, hung = f.after, False
    if after is not None and after.hang():
        seen.append(f"engine gone afterwards: {after.hang()}{DEADLOCK_SIGNATURE}")
        hung = True
    elif after is not None and after.nothing_back():
        seen.append(f"engine gone afterwards: {after.nothing_back()}")
    if seen:  # requests that hang afterwards are SRV-DEADLOCK's too: the checks after it are not run
        at = ((failed.where if failed else "") or (wrong.where if wrong else "")
              or (after.hang_where(where) if after is not None else where))
        return finding_at("SRV-LONGCTX", at, "; ".join(seen), also=("SRV-DEADLOCK",) if hung else ())
    return []


def no_nodes(rack: Rack) -> str:
    return "" if rack.nodes else ("attached (--atom-url) without a rack file: no nodes, so no server log to read; "
                                  "this check reads the logs of a server the suite launched or whose nodes the rack "
                                  "file names")


declare(Check("SRV-LONGCTX", "server", probe=served.longctx, judge=long_prompts_served, shows=read_shown,
              applies=no_nodes))
