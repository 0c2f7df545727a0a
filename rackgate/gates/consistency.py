"""SRV-CONSISTENCY: greedy decode against prefill of the prompt plus the decoded text.

At temperature 0 the token decode emits after prefix P is the argmax of the model given
prompt+P; prefill of prompt+P must therefore continue with that same token. The server is asked
twice: once to decode, then, for a few cut points, to prefill prompt+prefix and emit one token.
This needs no logprobs (ATOM's CompletionRequest has no logprobs field); where the server
returns tokens with logprobs, the cuts are exact token boundaries and decode's own choice is also
checked against its top logprob.
"""
from __future__ import annotations

from typing import Callable

from ..probes.prefill import Decoded, cuts

__all__ = ["Complete", "Decoded", "agrees", "cuts", "judge"]

Complete = Callable[[str, int], str]  # (prompt, max_tokens) -> generated text


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
