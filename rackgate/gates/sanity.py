"""SRV-SANITY: is the generated text a model's, or the output of a broken kernel path?

Degenerate signatures, as they appear on the real rack: every token '!' (A0 without B0->A0
translation), one token repeated, empty text, near-uniform logprobs (when the server returns
logprobs at all: ATOM returns null, so that one is judged only where they are present).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

TOKENISH = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Sample:
    prompt: str
    text: str
    expect: str | None = None           # case-insensitive substring a coherent answer contains
    token_logprobs: tuple[float, ...] = ()  # chosen-token logprobs, when the server gives them


def degenerate(text: str) -> str | None:
    """Why this text is degenerate, or None if it looks like language."""
    stripped = text.strip()
    if not stripped:
        return "empty text"
    if set(stripped) <= {"!"}:
        return f"every character is '!' ({len(stripped)} of them)"
    toks = TOKENISH.findall(stripped)
    if len(toks) >= 4:
        tok, n = Counter(toks).most_common(1)[0]
        if n / len(toks) >= 0.8:
            return f"one token repeated: {tok!r} is {n} of {len(toks)} tokens"
    return None


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
