"""SRV-CONSISTENCY: greedy decode against prefill of the prompt plus the decoded text.

At temperature 0 the token decode emits after prefix P is the argmax of the model given
prompt+P; prefill of prompt+P must therefore continue with that same token. The server is asked
twice: once to decode, then, for a few cut points, to prefill prompt+prefix and emit one token.
This needs no logprobs (ATOM's CompletionRequest has no logprobs field); where the server
returns tokens with logprobs, the cuts are exact token boundaries and decode's own choice is also
checked against its top logprob.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Decoded:
    text: str
    tokens: tuple[str, ...] = ()              # when the server gave tokens (logprobs)
    top: tuple[dict[str, float], ...] = ()    # per token {token: logprob}, when given


Complete = Callable[[str, int], str]  # (prompt, max_tokens) -> generated text


def cuts(d: Decoded, n: int) -> list[int]:
    """Character offsets into the decoded text where prefill is asked to continue: token
    boundaries when the server gave tokens, else only boundary-safe places: before one space that
    starts the next word, after a non-space ('Paris| is', '6,| 7'). GPT-2, Llama-3 and Qwen
    pre-tokenizers start a new piece at such a space; they do merge punctuation with the newlines
    after it ('.\n' is one token), so a cut after '.' before a newline would ask prefill to
    continue from half a token and blame the kernels for the tokenizer. Empty: no safe cut (the
    check then says it could not observe)."""
    if d.tokens:
        offs, o = [], 0
        for t in d.tokens[:-1]:
            o += len(t)
            offs.append(o)
    else:
        t = d.text
        offs = [i for i in range(1, len(t) - 1) if t[i] == " " and not t[i - 1].isspace() and not t[i + 1].isspace()]
    return [o for o in offs if 0 < o < len(d.text)][:n]


def agrees(remainder: str, nxt: str) -> bool:
    if not nxt:
        return False
    if remainder.startswith(nxt):
        return True
    return bool(nxt.strip()) and remainder.lstrip().startswith(nxt.strip())


def judge(prompt: str, d: Decoded, complete: Complete, positions: int) -> list[str]:
    """Findings (empty: decode and prefill agree at every cut)."""
    out = []
    for i, (tok, top) in enumerate(zip(d.tokens, d.top)):
        if top:
            best = max(top, key=lambda t: top[t])
            if best != tok and top.get(best, 0) > top.get(tok, float("-inf")):
                out.append(f"decode step {i} emitted {tok!r} but its own top logprob is {best!r}")
    for off in cuts(d, positions):
        prefix, remainder = d.text[:off], d.text[off:]
        nxt = complete(prompt + prefix, 1)
        if not agrees(remainder, nxt):
            out.append(f"after {prefix!r} decode continued {remainder[:16]!r}, prefill continues {nxt!r}")
    return out
