"""SRV-SANITY: is the generated text a model's, or the output of a broken kernel path?

Degenerate signatures, as they appear on the real rack: every token '!' (A0 without B0->A0
translation), one token repeated, empty text (rackgate/probes/degenerate.py: read from the text,
also by the probes that cut a stream on them), near-uniform logprobs (when the server returns
logprobs at all: ATOM returns null, so that one is judged only where they are present).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from ..probes.degenerate import STREAM_BANG, STREAM_TOKENS, STREAM_WINDOW, TOKENISH, degenerate, degenerate_so_far

__all__ = ["STREAM_BANG", "STREAM_TOKENS", "STREAM_WINDOW", "TOKENISH", "Answer", "Sample", "blamed", "by_node",
           "degenerate", "degenerate_so_far", "judge", "share", "uniform_logprobs"]


@dataclass(frozen=True)
class Sample:
    prompt: str
    text: str
    expect: str | None = None           # case-insensitive substring a coherent answer contains
    token_logprobs: tuple[float, ...] = ()  # chosen-token logprobs, when the server gives them


def uniform_logprobs(lps: tuple[float, ...], min_top1_prob: float) -> str | None:
    if not lps:
        return None
    mean_p = sum(math.exp(x) for x in lps) / len(lps)
    if mean_p < min_top1_prob:
        return f"near-uniform logprobs: mean chosen-token probability {mean_p:.2g} < {min_top1_prob:g}"
    return None


def judge(sample: Sample, min_top1_prob: float) -> list[str]:
    """Findings for one completion (empty list: healthy)."""
    out = []
    why = degenerate(sample.text)
    if why:
        out.append(why)
    why = uniform_logprobs(sample.token_logprobs, min_top1_prob)
    if why:
        out.append(why)
    if not out and sample.expect and sample.expect.lower() not in sample.text.lower():
        out.append(f"incoherent: expected {sample.expect!r} in the continuation")
    return out


# --- many answers, spread over the DP ranks ---------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """One answer of many: its text, why it is degenerate (None: it is language), and the DP rank
    and node that served it when that is known (ATOM's data_parallel_rank hint)."""
    prompt: str
    text: str
    why: str | None = None
    rank: int | None = None
    node: str | None = None

    def where(self) -> str:
        return f"{self.node}/dp{self.rank}" if self.rank is not None else "rank not known"


def _ranks(answers: Iterable[Answer]) -> str:
    return ", ".join(f"dp{r}" for r in sorted({a.rank for a in answers if a.rank is not None}))


def by_node(answers: list[Answer]) -> dict[str, tuple[list[Answer], list[Answer]]]:
    """{node: (its degenerate answers, its coherent ones)} for the answers whose node is known."""
    out: dict[str, tuple[list[Answer], list[Answer]]] = {}
    for a in answers:
        if a.node is not None:
            out.setdefault(a.node, ([], []))[a.why is None].append(a)
    return out


def blamed(answers: list[Answer]) -> str:
    """Where the degenerate answers came from (a node, or ranks of a node), '' when that is the
    whole server or not known."""
    bad = [a for a in answers if a.why]
    if not bad or len(bad) == len(answers) or any(a.node is None for a in bad):
        return ""  # none, every one (the whole server), or not attributable
    parts = []
    for node, (deg, ok) in by_node(answers).items():
        if deg:
            parts.append(node if not ok else f"{node}/{_ranks(deg).replace(', ', ',')}")
    return ", ".join(parts)


def share(answers: list[Answer], asked: int) -> str:
    """'k of n answers degenerate, the other n-k coherent' and what that reads as: every answer
    (a cause common to the whole server) or some (a node- or rank-specific cause), naming the
    nodes and ranks where the answers are attributable."""
    n = len(answers)
    bad = [a for a in answers if a.why]
    k = len(bad)
    came = (f"{n} of {asked} answers back, {asked - n} still in flight when the verdict was certain"
            if n < asked else f"all {asked} answers back")
    head = f"{k} of {n} answers degenerate, the other {n - k} coherent ({came})"
    example = f"; e.g. {bad[0].prompt!r} -> {bad[0].text[:48]!r} ({bad[0].where()}): {bad[0].why}" if bad else ""
    if not bad:
        return head
    if k == n:
        return head + example + ("; every answer is degenerate: a cause common to the whole server, not one "
                                 "node or rank" + ("" if n == asked else " (as far as the answers back show)"))
    nodes = by_node(answers)
    if bad[0].node is None:
        where = ("which DP rank served which answer is not known (no rank hint: ATOM's API server spreads "
                 "requests over its DP ranks by load and neither the answer nor its log line names the request)")
    else:
        lines = []
        for node, (deg, ok) in sorted(nodes.items()):
            if deg:
                lines.append(f"{node}: {len(deg)} degenerate ({_ranks(deg)})" + (f", {len(ok)} coherent ({_ranks(ok)})"
                                                                                 if ok else ""))
        good = sorted(n_ for n_, (deg, ok) in nodes.items() if ok and not deg)
        where = "; ".join(lines) + (f"; coherent on {', '.join(good)}" if good else "")
    whose = "the nodes'" if bad[0].node is None else "that node's"
    return (head + example + "; some ranks answer and some do not: a node- or rank-specific cause, not a global "
            f"one -- compare {whose} launch env (ATOM_USE_TRITON_MLA, HSA_TOOLS_LIB), rocjitsu prefix, patches "
            f"and HBM with the others: {where}")
