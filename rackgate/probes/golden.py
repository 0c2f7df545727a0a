"""SRV-GOLDEN's facts: one greedy completion as the server returned it, tokens and logprobs; the
golden set as the baseline holds it (`load`, `recording`: rackgate/baseline/golden.py merges and
keeps the prompt set); and SRV-GOLDEN's one read of every rank (`asked`).

The OpenAI completions format, as vLLM's `CompletionLogProbs` and ATOM's OpenAI server return
it when `logprobs: k` is asked: `choices[0].logprobs = {"tokens": [...], "token_logprobs":
[float | null, ...], "top_logprobs": [{token: logprob} | null, ...], "text_offset": [...]}`,
one entry per generated position (the chosen token may be in its top dict or added to it).
A server that returns `logprobs: null` (transformers serve on /v1/completions, ATOM main's
CompletionRequest) gives the text alone: its answers are compared as text, split into word
pieces (`pieces`), and the report says so.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import CouldNotObserve, UnrecognisedOutput
from ..server_access import Got
from .runs import WithRuns
from .served import UNRANKED, Hang, hang_of
from .target import Recorded

PIECE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")


def pieces(text: str) -> tuple[str, ...]:
    """The text's word pieces (a word with the space before it, a punctuation mark): what is
    compared where the server gave no tokens."""
    return tuple(PIECE.findall(text))


@dataclass(frozen=True)
class Completion:
    """One answer to one golden prompt. `tokens` are the server's (with logprobs) or the text's
    word pieces (without: `logprobs` then empty)."""
    prompt: str                                # the prompt's id in the prompt set
    text: str
    tokens: tuple[str, ...]
    logprobs: tuple[float, ...] = ()           # the chosen token's, per position
    top: tuple[dict[str, float], ...] = ()     # the top-k, per position
    rank: int | None = None                    # the DP rank asked (ATOM's hint), None: not known
    finish: str | None = None

    @property
    def has_logprobs(self) -> bool:
        return bool(self.logprobs)

    def same_answer(self, other: Completion) -> bool:
        return (self.tokens, self.logprobs, self.top) == (other.tokens, other.logprobs, other.top)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"prompt": self.prompt, "text": self.text, "tokens": list(self.tokens)}
        if self.logprobs:
            d["logprobs"], d["top"] = list(self.logprobs), [dict(t) for t in self.top]
        if self.finish is not None:
            d["finish"] = self.finish
        return d

    @classmethod
    def from_dict(cls, raw: dict[str, Any], rank: int | None = None) -> Completion:
        return cls(str(raw["prompt"]), str(raw["text"]), tuple(str(t) for t in raw["tokens"]),
                   tuple(float(x) for x in raw.get("logprobs") or ()),
                   tuple({str(k): float(v) for k, v in t.items()} for t in raw.get("top") or ()), rank,
                   raw.get("finish"))


def _number(x: object, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or math.isnan(x):
        raise UnrecognisedOutput(f"{what} is not a number: {x!r}")
    return float(x)


def parse(prompt: str, choice: dict[str, Any], rank: int | None = None) -> Completion:
    """One choice of a /v1/completions answer. logprobs null or absent: the text alone. A
    logprobs object it does not recognise whole (lists of different lengths, a token that is not
    a string, a top entry that is not a dict of numbers) raises UnrecognisedOutput."""
    text = choice.get("text")
    if not isinstance(text, str):
        raise UnrecognisedOutput(f"the answer to golden prompt {prompt!r} has no text: {str(choice)[:160]}")
    lp = choice.get("logprobs")
    finish = choice.get("finish_reason")
    if lp is None:
        return Completion(prompt, text, pieces(text), rank=rank, finish=finish)
    try:
        toks, chosen, top = lp["tokens"], lp["token_logprobs"], lp.get("top_logprobs")
    except (KeyError, TypeError):
        raise UnrecognisedOutput(f"logprobs of golden prompt {prompt!r} are not OpenAI completion logprobs "
                                 f"(tokens, token_logprobs, top_logprobs): {str(lp)[:160]}") from None
    if not isinstance(toks, list) or not isinstance(chosen, list) or len(toks) != len(chosen):
        raise UnrecognisedOutput(f"logprobs of golden prompt {prompt!r}: tokens and token_logprobs differ in "
                                 f"length or are not lists: {str(lp)[:160]}")
    if not toks and text:
        return Completion(prompt, text, pieces(text), rank=rank, finish=finish)  # the field, never filled
    if not all(isinstance(t, str) for t in toks):
        raise UnrecognisedOutput(f"logprobs of golden prompt {prompt!r}: a token is not a string: {toks[:8]}")
    tops: list[dict[str, float]] = []
    for i, (t, x) in enumerate(zip(toks, chosen)):
        here = top[i] if isinstance(top, list) and i < len(top) else None
        if here is not None and not isinstance(here, dict):
            raise UnrecognisedOutput(f"top_logprobs[{i}] of golden prompt {prompt!r} is not a dict: {here!r}")
        entry = {str(k): _number(v, f"top_logprobs[{i}][{k!r}]") for k, v in (here or {}).items()}
        if x is not None:
            entry.setdefault(t, _number(x, f"token_logprobs[{i}]"))
        tops.append(entry)
    if any(x is None for x in chosen):
        raise UnrecognisedOutput(f"golden prompt {prompt!r}: a generated position has no logprob (null)")
    return Completion(prompt, text, tuple(toks), tuple(_number(x, "token_logprobs") for x in chosen),
                      tuple(tops), rank, finish)


# --- the golden set, as the baseline file holds it under "sets" -> KEY -----------------------------
KEY = "golden"


@dataclass(frozen=True)
class GoldenSet:
    version: str
    max_tokens: int
    top_k: int
    concurrency: int
    logprobs: bool                         # the server returned logprobs when it was recorded
    runs: int
    answers: dict[str, list[Completion]]   # prompt id -> every distinct recorded answer

    def describe(self) -> str:
        n = sum(len(v) for v in self.answers.values())
        return (f"prompt set v{self.version}, {len(self.answers)} prompts, max_tokens {self.max_tokens}, "
                f"{'top-' + str(self.top_k) + ' logprobs' if self.logprobs else 'tokens alone (no logprobs)'}, "
                f"{self.runs} recording(s), {n} distinct answers")


def recording(answers: list[Completion], version: str, max_tokens: int, top_k: int, concurrency: int) -> dict[str, Any]:
    """One recording's golden set, as the baseline stores it."""
    by: dict[str, list[dict[str, Any]]] = {}
    for a in answers:
        add(by.setdefault(a.prompt, []), a.to_dict(), [a.rank] if a.rank is not None else [], 1)
    return {"version": version, "max_tokens": max_tokens, "top_k": top_k, "concurrency": concurrency,
            "logprobs": bool(answers) and all(a.has_logprobs for a in answers), "runs": 1, "answers": by}


def add(into: list[dict[str, Any]], answer: dict[str, Any], ranks: list[int], seen: int) -> None:
    """One answer added to a prompt's recorded answers (the same answer: its ranks and count merged)."""
    key = {k: v for k, v in answer.items() if k not in ("ranks", "seen")}
    for old in into:
        if {k: v for k, v in old.items() if k not in ("ranks", "seen")} == key:
            old["ranks"] = sorted(set(old.get("ranks", [])) | set(ranks))
            old["seen"] = int(old.get("seen", 1)) + seen
            return
    into.append({**key, "ranks": sorted(set(ranks)), "seen": seen})


class GoldenError(Exception):
    pass


def load(raw: dict[str, Any] | None) -> GoldenSet | None:
    if not raw:
        return None
    try:
        answers = {str(p): [Completion.from_dict(a) for a in xs] for p, xs in raw["answers"].items()}
        return GoldenSet(str(raw["version"]), int(raw["max_tokens"]), int(raw["top_k"]), int(raw["concurrency"]),
                         bool(raw["logprobs"]), int(raw.get("runs", 1)), answers)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise GoldenError(f"the baseline's golden set is not one rackgate wrote ({type(e).__name__}: {e})") from None


# --- SRV-GOLDEN's one read of every rank ---------------------------------------------------------
@dataclass(frozen=True)
class Asked:
    """The session's one golden run (the same for every rank's item): every answer, what it is
    compared against, and how the asking ended."""
    url: str
    version: str                              # the prompt set's
    recording: bool                           # --record-baseline: the ranks held to each other
    gold: GoldenSet | None                    # the golden set compared against (None: recording)
    max_tokens: int
    top_k: int
    concurrency: int
    table: Mapping[int, str]                  # DP rank -> node (empty: ranks not known)
    floor: tuple[float, float]                # the rack file's band floors (golden_logprob_tol, golden_kl_tol)
    answers: tuple[Completion, ...] = ()      # every answer back without an error
    errors: tuple[tuple[int | None, str, str], ...] = ()  # (rank, prompt id, error) answered with an error
    asked: int = 0                            # the asks answered, with or without an error
    hang: Hang | None = None                  # the first batch's hang (asking stopped there)
    blind: str = ""                           # a batch of which nothing came back (asking stopped there)
    prompts: str = ""                         # prompts by rank, as evidence
    shown: tuple[tuple[str, str], ...] = field(default=())


@dataclass(frozen=True)
class Golden:
    """One DP rank's item of the run (`rank` UNRANKED: the one item of a server whose ranks are not known)."""
    rank: int
    node: str
    run: Asked


def _golden_set(rec: Recorded) -> GoldenSet:
    """The baseline's golden set; none recorded is could-not-observe: the comparison cannot be made
    (the item is in -m gate only when one is recorded: rackgate/hooks/regression.py)."""
    baseline = rec.baseline
    if baseline is None:
        raise CouldNotObserve("no baseline recorded (--baseline FILE or the rack file's baseline): record one "
                              "with the golden set on a known-good image: pytest --record-baseline")
    try:
        gold = load(baseline.sets.get(KEY))
    except GoldenError as e:
        raise CouldNotObserve(f"{baseline.path}: {e}") from None
    if gold is None:
        raise CouldNotObserve(f"the baseline {baseline.path} holds no golden set: record one on a known-good image "
                              "with pytest -m 'serving or gate' --record-baseline")
    return gold


def _choice(g: Got) -> dict[str, Any]:
    """The first choice of a 200 answer as the server sent it ({} when none)."""
    choices = g.body.get("choices") if not g.error else None
    return choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}


def asked(s: WithRuns) -> dict[int, Golden]:
    """SRV-GOLDEN's one read: every prompt of the golden prompt set (the session's `golden_prompts`)
    asked of every rank (the hint, or spread by the server: the run's routing), prompt by prompt,
    greedy and non-streamed (the whole choice with its logprobs), `concurrency` at a time -- the
    concurrency the golden set was recorded at, since batching changes kernels --, asking stopped at
    a batch's hang or a batch of which nothing came back. Compared against the baseline's golden set,
    or, recording (--record-baseline), against the majority. {rank: its item} ({UNRANKED: the one
    item} when the ranks are not known)."""
    cfg = s.rack.serving
    rec = s.runs.recorded()
    gold = None if rec.recording else _golden_set(rec)
    ps = s.runs.golden_prompts()
    if gold is not None and gold.version != ps.version:
        raise CouldNotObserve(f"the golden set was recorded with prompt set v{gold.version}, this rackgate asks "
                              f"v{ps.version}: record it again (--record-baseline)")
    max_tokens = gold.max_tokens if gold else cfg.golden_max_tokens
    top_k = gold.top_k if gold else cfg.golden_top_k
    concurrency = gold.concurrency if gold else cfg.golden_concurrency
    pr = s.per_rank
    # every prompt's asks side by side: a batch keeps every rank busy (rackgate/baseline/golden.py asks)
    asks = [(text, r) for text in ps.prompts.values() for r in pr.routing.targets(1, cfg.golden_repeats_attached)]
    ids = {text: pid for pid, text in ps.prompts.items()}
    extra = {"logprobs": top_k} if top_k else None
    got: list[Got] = []
    hang: Hang | None = None
    blind = ""
    step = max(1, concurrency)
    for i in range(0, len(asks), step):
        spread = pr.on(asks[i:i + step], max_tokens, stream=False, extra=extra)
        hang, blind = hang_of(s, spread, "SRV-GOLDEN"), spread.nothing_back() or ""
        got += spread.got
        if hang or blind:
            break
    table = dict(s.table)
    prompts = pr.routing.describe() + "\n" + "\n".join(
        f"dp{g.ask.rank if g.ask.rank is not None else '?'}\t{g.seconds:.1f}s\t{ids[g.ask.prompt]}\t"
        + (g.error or repr(_choice(g).get("text", ""))[:100]) for g in got)
    answers = tuple(parse(ids[g.ask.prompt], _choice(g), g.ask.rank) for g in got if g.replied and not g.error)
    errors = tuple((g.ask.rank, ids[g.ask.prompt], g.error) for g in got if g.error)
    run = Asked(s.url, ps.version, rec.recording, gold, max_tokens, top_k, concurrency, table,
                (cfg.golden_logprob_tol, cfg.golden_kl_tol), answers, errors,
                len(got), hang, blind, prompts, hang.shown if hang is not None else ())
    if not table:
        return {UNRANKED: Golden(UNRANKED, "", run)}
    return {r: Golden(r, n, run) for r, n in table.items()}
