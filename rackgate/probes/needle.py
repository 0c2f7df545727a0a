"""SRV-LONGCTX's prompts: a needle in a haystack. A long text (`load.filler`) with one sentence in it
that carries a value, at a depth that moves from prompt to prompt, and a question at the end whose
answer is that value: an answer is checked exactly, not only that one came back (long-context
corruption answers fluently and wrong: vllm #46856, ~19 % of answers past ~60k tokens).

How long the haystack is, is the caller's (`words`: SRV-LONGCTX sizes it from the engine's chunk
or the rack file); how a prompt is built is here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .load import filler

QUESTION = "\nQuestion: What is the secret number in the text above?\nAnswer: The secret number is"
NUMBER = re.compile(r"\d[\d,]*")


@dataclass(frozen=True)
class Needle:
    prompt: str
    value: str       # what a right answer says: the needle's number, exactly
    depth: float     # where in the haystack the needle sits (0: the start, 1: the end)
    words: int


def needle(words: int, seed: int) -> Needle:
    """A haystack of about `words` words with the needle at depth 0.2, 0.4, 0.6 or 0.8 (by seed)
    carrying a five-digit number of its own (by seed), then the question."""
    value = str(10000 + (seed * 7919 + 38213) % 90000)
    depth = (seed % 4 + 1) / 5
    hay = filler(max(0, words), seed).split()
    at = int(len(hay) * depth)
    text = " ".join([*hay[:at], f"The secret number is {value}.", *hay[at:]])
    return Needle(text + QUESTION, value, depth, words)


def missed(answer: str, n: Needle) -> str | None:
    """None when the answer's first number is the needle's value exactly; else what it said."""
    got = NUMBER.search(answer)
    if got is not None and got.group(0).replace(",", "") == n.value:
        return None
    said = repr(answer.strip()[:40])
    return (f"answered {said} for the needle {n.value} (at {n.depth:.0%} of ~{n.words} words)" if got is None else
            f"answered {got.group(0)} ({said}) for the needle {n.value} (at {n.depth:.0%} of ~{n.words} words)")
