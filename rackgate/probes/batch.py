"""SRV-BATCH's reads: the same greedy prompts asked of every DP rank alone, then inside batches of
every decode batch-size bucket, mixed with sampled requests, and cached (rackgate/gates/batch.py
judges them; docs/serving.md says what each condition catches and where the failures were reported).

One session read (`asked`), rounds in order, every rank at once in each round (the requests a rank
gets in a round are its batch; the ranks are separate engines, so each round batches every rank
alike), all greedy answers with the top-k logprobs where the server gives them:

1. alone: each prompt once on every rank, one request per rank -- the reference (the first time
   the session asks it: the prompts carry a session tag, so none is in the prefix cache yet);
2. bucket k, for every bucket of `buckets` (powers of two up to serving.batch_concurrency, and the
   launch command's --cudagraph-capture-sizes up to it): k greedy requests on every rank at once;
3. mixed: every prompt with one sampled request of each KIND on every rank at once; when a greedy
   answer there leaves its reference, each kind again alone with the prompts (which kind it is);
4. cached: each prompt alone again (the same prompt again: a prefix-cache hit where the engine
   caches prefixes), the long one a `batch_prefix_words`-word prefix cached.

Asking stops at a round's hang, or a round of which nothing came back.
"""
from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import CouldNotObserve, UnrecognisedOutput
from . import load
from .golden import Completion, parse
from .served import UNRANKED, Hang, Server, hang_of

ALONE = "alone"
LONG = "long"  # the prompt id of the long-prefix prompt

# The sampled requests mixed into a batch of greedy ones: (kind, its fields). Every one samples
# (temperature > 0) except where the kind is the sampling itself; the greedy requests of the batch
# ask nothing of these (the sampler's other path: ROCm/aiter #5192 corrupts a batch that mixes a
# request setting top_k with one that does not).
SAMPLED_PROMPT = "Write one sentence about the sea."
KINDS: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = (
    ("top_k", (("temperature", 0.8), ("top_k", 20), ("logprobs", None))),
    ("top_p", (("temperature", 0.8), ("top_p", 0.9), ("logprobs", None))),
    ("temperature", (("temperature", 1.0), ("logprobs", None))),
    ("logprobs", (("temperature", 0.8), ("logprobs", 1))),
    ("max_tokens", (("temperature", 0.8), ("max_tokens", 0), ("logprobs", None))),  # 0: 3 x the greedy ones
    ("stop", (("temperature", 0.8), ("stop", "."), ("logprobs", None))),
)


def capture_sizes(command: str) -> tuple[int, ...]:
    """The batch sizes the launch command captures graphs for: ATOM's `--cudagraph-capture-sizes
    "[1,2,4,8]"` (one Python-literal list: atom/model_engine/arg_utils.py parse_size_list), vLLM's
    `--cudagraph-capture-sizes 1 2 4 8` (nargs='+'), either with `=`. () when the command names
    none (the engine's default sizes are not read: the powers of two cover ATOM's small ones)."""
    try:
        words = shlex.split(command.replace("\\\n", " "))
    except ValueError:
        words = command.split()
    out: list[int] = []
    for i, w in enumerate(words):
        flag, eq, val = w.partition("=")
        if flag.replace("_", "-") != "--cudagraph-capture-sizes":
            continue
        vals = [val] if eq else []
        for nxt in ([] if eq else words[i + 1:]):
            if not SIZES.fullmatch(nxt):
                break
            vals.append(nxt)
        out += [int(x) for v in vals for x in re.findall(r"\d+", v)]
    return tuple(sorted({x for x in out if x > 0}))


SIZES = re.compile(r"[\[\]\d,\s]+")
MAX_SEQS = re.compile(r"--max[-_]num[-_]seqs(?:=|\s+)(\d+)")


def max_seqs(command: str) -> int | None:
    """--max-num-seqs of the launch command (a rank never batches more), None when not named."""
    m = MAX_SEQS.search(command)
    return int(m.group(1)) if m else None


def buckets(concurrency: int, captured: tuple[int, ...] = (), extra: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The batch sizes asked beyond alone: powers of two from 2 up to `concurrency`, and the
    captured/extra sizes up to it."""
    powers, k = [], 2
    while k <= concurrency:
        powers.append(k)
        k *= 2
    return tuple(sorted({*powers, *(x for x in (*captured, *extra) if 2 <= x <= concurrency)}))


@dataclass(frozen=True)
class Said:
    """One greedy answer under one condition (the rank's: None where the ranks are not known)."""
    condition: str
    prompt: str                         # the prompt's id (p1, p2, ..., long)
    rank: int | None
    answer: Completion | None           # None: answered with an error
    error: str = ""


@dataclass(frozen=True)
class Run:
    """The session's one read (the same for every rank's item)."""
    url: str
    table: Mapping[int, str]
    prompts: Mapping[str, str]                 # id -> the prompt as asked
    buckets: tuple[int, ...]
    floor: tuple[float, float]                 # (golden_logprob_tol, golden_kl_tol)
    said: tuple[Said, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()  # (kind, the server's words) for sampled requests it refused
    asked: int = 0
    hang: Hang | None = None
    hang_in: str = ""                           # the condition whose round hung
    blind: str = ""
    shown: tuple[tuple[str, str], ...] = field(default=())


@dataclass(frozen=True)
class Batched:
    rank: int
    node: str
    run: Run


def sized(params: tuple[tuple[str, Any], ...], n: int) -> tuple[tuple[str, Any], ...]:
    """A kind's fields for greedy requests of n tokens (its other max_tokens: 3 x n)."""
    return tuple((k, 3 * n if k == "max_tokens" else v) for k, v in params)


def mixed(kinds: tuple[str, ...]) -> str:
    return "mixed with sampled requests (" + ", ".join(kinds) + ")" if len(kinds) > 1 else f"mixed with {kinds[0]}"


def _choice(g: Any) -> dict[str, Any]:
    choices = g.body.get("choices") if not g.error else None
    return choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}


def asked(s: Server) -> dict[int, Batched]:
    """SRV-BATCH's one read (the module's rounds). {rank: its item} ({UNRANKED: one} when the
    ranks are not known: then each round's requests go to the server, which is one batch)."""
    cfg, pr = s.rack.serving, s.per_rank
    table = dict(s.table)
    if len(table) > 1 and not pr.routing.hinted:
        raise CouldNotObserve(f"{pr.routing.note or 'the rank hint is not used'}: a rank's batch cannot be made "
                              "without it")
    ranks: list[int | None] = list(table) if len(table) > 1 else [None]
    # a session's own prompts: none is in the prefix cache before its first ask (serving.batch_tag)
    tag = f"({secrets.token_hex(3)}) " if cfg.batch_tag else ""
    prompts = {f"p{i + 1}": f"{tag}{p}" for i, p in enumerate(cfg.batch_prompts)}
    if cfg.batch_prefix_words:
        prompts[LONG] = f"{tag}{load.filler(cfg.batch_prefix_words, 3)}\n{cfg.batch_prompts[0]}"
    ids = {t: i for i, t in prompts.items()}
    short = [p for p in prompts if p != LONG]
    command = s.rack.launch.command
    most = min(cfg.batch_concurrency, max_seqs(command) or cfg.batch_concurrency)
    sizes = buckets(most, capture_sizes(command), tuple(cfg.batch_capture_sizes))
    n, extra = cfg.batch_max_tokens, {"logprobs": cfg.golden_top_k} if cfg.golden_top_k else None
    said: list[Said] = []
    refused: list[tuple[str, str]] = []
    shown: list[tuple[str, str]] = [("prompts", "\n".join(f"{i}: {t[:160]!r}" for i, t in prompts.items())),
                                    ("buckets", f"alone, then {', '.join(map(str, sizes))} requests at once on every "
                                                "rank (serving.batch_concurrency up to --max-num-seqs, "
                                                "--cudagraph-capture-sizes)")]
    run = Run(s.url, table, prompts, sizes, (cfg.golden_logprob_tol, cfg.golden_kl_tol))
    count = 0

    def ask(condition: str, asks: list[tuple[Any, ...]]) -> Run | None:
        """One round; the Run to return when asking stops here (a hang, nothing back)."""
        nonlocal count
        asks = [a if len(a) < 3 else (a[0], a[1], sized(a[2], n)) for a in asks]
        spread = pr.on(asks, n, stream=False, extra=extra)
        count += len(spread.got)
        shown.append((condition, spread.evidence()))
        for g in spread.got:
            kind = next((k for k, params in KINDS if g.ask.params and sized(params, n) == g.ask.params), None)
            if kind is not None:  # a sampled request: not compared; refused, it was not in the batch
                if g.error and 400 <= g.status < 500:
                    refused.append((kind, g.error[:200]))
                continue
            try:
                said.append(Said(condition, ids[g.ask.prompt], g.ask.rank,
                                 parse(ids[g.ask.prompt], _choice(g), g.ask.rank) if not g.error else None,
                                 g.error or ""))
            except UnrecognisedOutput as e:
                raise CouldNotObserve(f"SRV-BATCH, {condition}: {e}") from None
        hang, blind = hang_of(s, spread, "SRV-BATCH"), spread.nothing_back() or ""
        if hang or blind:
            return _done(run, said, refused, count, shown, hang, condition, blind)
        return None

    rounds: list[tuple[str, list[tuple[Any, ...]]]] = [(ALONE, [(prompts[p], r) for r in ranks]) for p in prompts]
    rounds += [(f"bucket {k}", [(prompts[short[i % len(short)]], r) for r in ranks for i in range(k)])
               for k in sizes]
    every = tuple(k for k, _ in KINDS)
    rounds.append((mixed(every), [a for r in ranks for a in ([(prompts[p], r) for p in short]
                                                             + [(SAMPLED_PROMPT, r, ps) for _, ps in KINDS])]))
    for condition, asks in rounds:
        stopped = ask(condition, asks)
        if stopped is not None:
            return _items(stopped)
    if _moved(said, mixed(every)):  # which kind: each alone with the prompts
        for kind, ps in KINDS:
            stopped = ask(mixed((kind,)), [a for r in ranks for a in ([(prompts[p], r) for p in short]
                                                                      + [(SAMPLED_PROMPT, r, ps)])])
            if stopped is not None:
                return _items(stopped)
    for p in prompts:
        cond = (f"cache hit on a {cfg.batch_prefix_words}-word prefix (the same long prompt again)" if p == LONG
                else "cache hit (the same prompt again)")
        stopped = ask(cond, [(prompts[p], r) for r in ranks])
        if stopped is not None:
            return _items(stopped)
    return _items(_done(run, said, refused, count, shown, None, "", ""))


def _done(run: Run, said: list[Said], refused: list[tuple[str, str]], count: int, shown: list[tuple[str, str]],
          hang: Hang | None, hang_in: str, blind: str) -> Run:
    return Run(run.url, run.table, run.prompts, run.buckets, run.floor, tuple(said), tuple(dict.fromkeys(refused)),
               count, hang, hang_in, blind, tuple(shown) + (hang.shown if hang is not None else ()))


def _items(run: Run) -> dict[int, Batched]:
    if not run.table:
        return {UNRANKED: Batched(UNRANKED, "", run)}
    return {r: Batched(r, nd, run) for r, nd in run.table.items()}


def _moved(said: list[Said], condition: str) -> bool:
    """Whether a greedy answer of `condition` has other tokens than its rank's alone answer (then
    the kinds are asked one by one; a logprob move alone is judged, not narrowed down)."""
    ref = {(x.rank, x.prompt): x.answer.tokens for x in said if x.condition == ALONE and x.answer is not None}
    return any(x.answer is not None and (x.rank, x.prompt) in ref and x.answer.tokens != ref[(x.rank, x.prompt)]
               for x in said if x.condition == condition)
