"""SRV-GOLDEN: each DP rank's greedy answers against the golden set the same image recorded.

A GPU or expert shard that computes slightly wrong answers fluently: the same first tokens,
the chosen token's probability a little off, later a near-tie that flips. Per answer:
- the first position where its tokens leave the golden answer's (None: none),
- over the positions before it (and the divergent one: the same prefix conditions both),
  the largest |delta logprob| of the chosen token and the largest KL(golden || now) over the
  golden top-k (a token missing from the new top-k takes the new top-k's lowest logprob: a
  lower bound of its KL term).
The golden set keeps every distinct healthy answer it recorded (repeated recordings, every
rank): an answer passes when one of them has its tokens and lies within the band. The band is
the largest of the rack file's floors and golden_noise x the largest distance between two
healthy recordings of one prompt (learned, as the regression facts learn their spread).
Without logprobs (the server returns none) the tokens alone are compared.

The row (`rank_golden`, declared below: one item per DP rank, `SRV-GOLDEN::node3-dp9`) judges
each rank's answers of the session's one golden run (rackgate/probes/golden.py `asked`) against the
golden set, or, recording (--record-baseline), against the answer most ranks gave; recording, its
items keep the golden set of the answers that agree with the majority (`golden_kept`). A server
whose ranks are not known (attached without a rack file) is one item, keyed "server", judged on the
share of every answer (ACC-BUDGET's way).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import golden as golden_probe
from ..probes.golden import Asked, Completion, Golden, pieces
from ..probes.served import UNRANKED
from .declare import Ranked, Shown, declare, ranked
from .srv import hang_finding


@dataclass(frozen=True)
class Distance:
    diverge_at: int | None      # first position whose token differs (None: the same tokens)
    dlogprob: float | None      # max |delta logprob| of the chosen token (None: no logprobs on a side)
    kl: float | None            # max KL(golden || now) over the golden top-k
    worst_at: int = 0           # the position of the largest |delta logprob|

    def within(self, band: Band) -> bool:
        return (self.diverge_at is None and (self.dlogprob is None or self.dlogprob <= band.logprob)
                and (self.kl is None or self.kl <= band.kl))

    def describe(self) -> str:
        parts = ["the same tokens" if self.diverge_at is None else f"tokens diverge at position {self.diverge_at}"]
        if self.dlogprob is not None:
            parts.append(f"max |delta logprob| {self.dlogprob:.3g}")
        if self.kl is not None:
            parts.append(f"max KL over the top-k {self.kl:.3g}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Band:
    logprob: float
    kl: float

    def describe(self) -> str:
        return f"|delta logprob| <= {self.logprob:.3g}, KL <= {self.kl:.3g}"


def _kl(ref: dict[str, float], now: dict[str, float]) -> float:
    if not ref or not now:
        return 0.0
    floor = min(now.values())
    return max(0.0, sum(math.exp(lp) * (lp - now.get(t, floor)) for t, lp in ref.items()))


def distance(ref: Completion, now: Completion) -> Distance:
    n = min(len(ref.tokens), len(now.tokens))
    at = next((i for i in range(n) if ref.tokens[i] != now.tokens[i]), None)
    if at is None and len(ref.tokens) != len(now.tokens):
        at = n  # one stopped where the other went on
    if not (ref.has_logprobs and now.has_logprobs):
        return Distance(at, None, None)
    upto = min(len(ref.logprobs), len(now.logprobs), (at + 1) if at is not None else n)
    same = range(min(upto, at if at is not None else upto))  # the chosen token is the same one here
    dlp, worst = max(((abs(ref.logprobs[i] - now.logprobs[i]), -i) for i in same), default=(0.0, 0))
    worst = -worst  # the first position of the largest move
    kl = max((_kl(ref.top[i], now.top[i]) for i in range(upto) if i < len(ref.top) and i < len(now.top)),
             default=0.0)
    return Distance(at, dlp, kl, worst)


def learned(samples: list[Completion]) -> Band:
    """What healthy recordings of one prompt moved: the largest distance between two of them
    with the same tokens (0 when there is one)."""
    lp = kl = 0.0
    for i, a in enumerate(samples):
        for b in samples[i + 1:]:
            d = distance(a, b)
            if d.diverge_at is None:
                lp, kl = max(lp, d.dlogprob or 0.0), max(kl, d.kl or 0.0)
    return Band(lp, kl)


def band(samples: dict[str, list[Completion]], floor: Band, noise: float) -> Band:
    """The tolerance: the floors, or noise x the largest move between healthy recordings."""
    moved = [learned(s) for s in samples.values()]
    return Band(max([floor.logprob, *(noise * m.logprob for m in moved)]),
                max([floor.kl, *(noise * m.kl for m in moved)]))


@dataclass(frozen=True)
class Drift:
    now: Completion
    golden: Completion        # the closest golden answer
    distance: Distance

    def position(self) -> int:
        """The first divergent token, else the position the chosen token's logprob moved most."""
        d = self.distance
        return d.diverge_at if d.diverge_at is not None else d.worst_at

    def side_by_side(self, width: int = 60) -> str:
        """The golden continuation and this one, from a few tokens before the divergence."""
        start = max(0, self.position() - 3)
        gold, now = "".join(self.golden.tokens[start:]), "".join(self.now.tokens[start:])
        head = "..." if start else ""
        return f"golden {head}{gold[:width]!r} | this {head}{now[:width]!r}"


def closest(golden: list[Completion], now: Completion) -> tuple[Completion, Distance]:
    """The golden answer nearest this one: the same tokens first, then the latest divergence,
    then the smallest logprob move."""
    def key(g: Completion) -> tuple[int, float, float]:
        d = distance(g, now)
        return (-(d.diverge_at if d.diverge_at is not None else 1 << 30), d.dlogprob or 0.0, d.kl or 0.0)
    g = min(golden, key=key)
    return g, distance(g, now)


def drift(golden: list[Completion], now: Completion, tol: Band) -> Drift | None:
    """None when one golden answer has this answer's tokens within the band; else the drift
    from the closest. A judge given no golden answer refuses to judge."""
    if not golden:
        raise ValueError(f"no golden answer for prompt {now.prompt!r}: nothing to compare with")
    g, d = closest(golden, now)
    return None if d.within(tol) else Drift(now, g, d)


def majority(answers: list[Completion]) -> dict[str, list[Completion]]:
    """While recording: per prompt, the answer most ranks gave (the reference the ranks are held
    to before their answers become golden)."""
    out: dict[str, list[Completion]] = {}
    by_prompt: dict[str, list[Completion]] = {}
    for a in answers:
        by_prompt.setdefault(a.prompt, []).append(a)
    for p, xs in by_prompt.items():
        counts = Counter(x.tokens for x in xs)
        top = counts.most_common(1)[0][0]
        out[p] = [next(x for x in xs if x.tokens == top)]
    return out


# --- where the drift is, and what that reads as ----------------------------------------------
@dataclass(frozen=True)
class Reading:
    where: str        # the verdict's place: nodes, node/dpN, or the server
    text: str


def read(drifts: list[Drift], answers: list[Completion], table: dict[int, str], server: str,
         logprobs: bool) -> Reading:
    """What k drifting answers of n read as: every rank moved together (an image change: compare
    the images, -m regression), or one or a few ranks (hardware, or a node's own launch), with
    each drifting rank, its node, the prompt, the position and the two continuations."""
    n, k = len(answers), len(drifts)
    share = f"{k} of {n} answers ({100 * k / n:.0f}%) drift from the golden set"
    how = "" if logprobs else " (the server returns no logprobs: tokens alone compared)"
    drifts = sorted(drifts, key=lambda d: d.distance.diverge_at is None)  # a divergent continuation first
    ex = "; ".join(f"{_where(d.now, table)} {d.now.prompt!r} at position {d.position()}: {d.distance.describe()}: "
                   f"{d.side_by_side()}" for d in drifts[:4]) + (f" (+{k - 4} more)" if k > 4 else "")
    ranks = sorted({a.rank for a in answers if a.rank is not None})
    bad = sorted({d.now.rank for d in drifts if d.now.rank is not None})
    if not ranks or any(a.rank is None for a in answers):
        what = ("every answer drifts: an image or model change (compare the images: -m regression)" if k == n else
                "some answers drift and others do not: one or a few replicas or ranks compute differently "
                "(hardware, or one launch)")
        return Reading(server, f"{share}{how}; which DP rank served which answer is not known (no rank hint): "
                       f"{what}; {ex}")
    if set(bad) == set(ranks):
        return Reading(server, f"{share}{how}; every rank moved together ({len(ranks)} ranks): an image change, not "
                       f"one GPU -- compare this image with the golden set's (pytest -m regression); {ex}")
    nodes: dict[str, list[int]] = {}
    for r in bad:
        nodes.setdefault(table.get(r, "?"), []).append(r)
    whole = [nd for nd, rs in nodes.items() if set(rs) == {r for r in ranks if table.get(r) == nd}]
    where = ", ".join(nd if nd in whole else f"{nd}/" + ",".join(f"dp{r}" for r in rs)
                      for nd, rs in sorted(nodes.items()))
    what = (f"every rank of {', '.join(sorted(whole))} and no other: a node-specific cause (that node's launch "
            "environment, kernels or HBM)" if whole and len(nodes) == len(whole) else
            f"{len(bad)} of {len(ranks)} ranks drift ({', '.join(f'dp{r}' for r in bad)}), the others match: "
            "hardware (that GPU's numerics, an HBM row, an expert shard) or a node-specific launch difference")
    return Reading(where, f"{share}{how}; {what}; {ex}")


def _where(c: Completion, table: dict[int, str]) -> str:
    return f"{table.get(c.rank, '?')}/dp{c.rank}" if c.rank is not None else "(rank not known)"


# --- SRV-GOLDEN, declared: one item per DP rank ------------------------------------------------
@dataclass(frozen=True)
class Compared:
    """The run's answers against their reference: what the judge, the evidence and the kept set read."""
    answers: list[Completion]
    ref: dict[str, list[Completion]]
    tol: Band
    against: str
    logprobs: bool
    drifts: list[Drift]


def _as_text(c: Completion) -> Completion:
    return Completion(c.prompt, c.text, pieces(c.text), rank=c.rank, finish=c.finish)


def compared(run: Asked, rack: Rack) -> Compared:
    """Every answer of the run against the golden set within its band (recording: against the
    answer most ranks gave, within the rack file's floors); one side without logprobs: both compared
    as text (word pieces). A prompt the golden set has no answer to: could not observe."""
    answers = list(run.answers)
    with_lp = bool(answers) and all(a.has_logprobs for a in answers)
    floor = Band(*run.floor)
    if run.gold is None:
        ref, tol, against = majority(answers), floor, "the answer most ranks gave (recording)"
    else:
        ref, tol = run.gold.answers, band(run.gold.answers, floor, rack.serving.golden_noise)
        if not (run.gold.logprobs and with_lp):  # one side has no logprobs: both compared as text (word pieces)
            ref = {p: [_as_text(g) for g in gs] for p, gs in ref.items()}
            answers = [_as_text(a) for a in answers]
            with_lp = False
        against = f"the golden set ({run.gold.describe()})"
    missing = sorted({a.prompt for a in answers} - set(ref))
    if missing:
        raise CouldNotObserve(f"the golden set has no answer to {', '.join(missing)}: record it again")
    drifts = [d for a in answers if (d := drift(ref[a.prompt], a, tol)) is not None]
    return Compared(answers, ref, tol, against, with_lp, drifts)


def _at(rank: int | None, table: dict[int, str]) -> str:
    return f"{table.get(rank, '?')}/dp{rank}" if rank is not None else "(rank not known)"


def rank_golden(r: Ranked[Golden], rack: Rack, where: str) -> list[str]:
    """This rank's answers to the golden prompts are golden: a hang of the golden requests is
    SRV-DEADLOCK's on the hung rank (the others not judged); a batch of which nothing came back, or
    every prompt answered with an error, could not observe; this rank's prompts answered with an
    error while others were answered are its FAILED; then each of its answers within the band of a
    golden answer of its prompt (recording: of the answer most ranks gave), the reading over every
    rank's (one rank, one node's ranks, every rank alike). Ranks not known: the share of every answer."""
    run = r.mine.run
    table = dict(run.table)
    # ranks not known, or one rank: the one rank is asked without the hint (every request lands on
    # it: rackgate.atom.fanout.takes_rank_hint), so every answer is its, none carries a rank
    mine = r.rank == UNRANKED or len(table) <= 1
    if run.hang is not None:
        if r.rank in run.hang.ranks or not run.hang.ranks or mine:
            return hang_finding("SRV-GOLDEN", run.hang.seen, run.hang.where)
        raise CouldNotObserve(f"the golden requests hung at {run.hang.where} (see SRV-DEADLOCK): dp{r.rank} was not "
                              "judged")
    if run.blind:
        raise CouldNotObserve(run.blind)
    if run.errors and len(run.errors) == run.asked:
        rank, _, error = run.errors[0]
        raise CouldNotObserve(f"none of {run.asked} golden prompts was answered (e.g. {_at(rank, table)}: {error})")
    errors = [e for e in run.errors if mine or e[0] == r.rank]
    if errors:  # others to the same server were answered: a finding about this rank, not blindness
        rank, _, error = errors[0]
        return [f"{len(errors)} of {run.asked} golden prompts answered with an error while the others were answered "
                f"(e.g. {_at(rank, table)}: {error})"]
    c = compared(run, rack)
    if not any(mine or a.rank == r.rank for a in c.answers):
        raise CouldNotObserve(f"dp{r.rank}: none of its golden prompts came back")
    if not any(mine or d.now.rank == r.rank for d in c.drifts):
        return []
    seen = read(c.drifts, c.answers, table, run.url, c.logprobs)
    own = "" if mine else (f"{sum(1 for d in c.drifts if d.now.rank == r.rank)} of "
                           f"{sum(1 for a in c.answers if a.rank == r.rank)} of dp{r.rank}'s answers drift; ")
    return [f"{own}{seen.text} (against {c.against}; band {c.tol.describe()})"]


def golden_shown(r: Ranked[Golden], rack: Rack) -> list[Shown]:
    g = r.ranks.get(r.rank)
    if g is None:
        return []
    run = g.run
    out = [Shown("golden prompts, every rank", run.prompts)] + [Shown(t, x) for t, x in run.shown]
    try:
        c = compared(run, rack)
    except CouldNotObserve:
        return out
    table = dict(run.table)
    note = (f"top-{run.top_k} logprobs compared" if c.logprobs else
            "the server returns no logprobs: tokens alone compared (the text's word pieces)")
    return out + [Shown("band and distances", f"against {c.against}\nband: {c.tol.describe()}\n{note}\n" + "\n".join(
        f"{_at(a.rank, table)}\t{a.prompt}\t{closest(c.ref[a.prompt], a)[1].describe()}" for a in c.answers))]


def golden_kept(r: Ranked[Golden], key: str) -> dict[str, dict[str, Any]]:
    """Recording: the golden set of the answers that agree with the majority (a rank that answers
    otherwise than most FAILS; its answers never turn golden); {} when comparing. Every rank's item
    keeps the same set (facts.keep overwrites)."""
    g = r.ranks.get(r.rank)
    if g is None or not g.run.recording or g.run.hang is not None or g.run.blind or not g.run.answers:
        return {}
    run = g.run
    answers = list(run.answers)
    ref = majority(answers)
    odd = {id(d.now) for a in answers if (d := drift(ref[a.prompt], a, Band(*run.floor))) is not None}
    return {golden_probe.KEY: golden_probe.recording([a for a in answers if id(a) not in odd], run.version,
                                                     run.max_tokens, run.top_k, run.concurrency)}


def golden_applies(rack: Rack) -> str:
    return "" if rack.serving.golden else ("serving.golden = false in the rack file: the golden comparison does not "
                                           "apply")


declare(ranked("SRV-GOLDEN", probe=golden_probe.asked, judge=rank_golden, shows=golden_shown, keeps=golden_kept,
               applies=golden_applies, unranked=True))
