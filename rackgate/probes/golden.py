"""SRV-GOLDEN's facts: one greedy completion as the server returned it, tokens and logprobs.

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
from dataclasses import dataclass
from typing import Any

from ..errors import UnrecognisedOutput

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
