"""Where SRV-CONSISTENCY cuts a greedy decode to ask prefill for the next token: the decode as read
(text, and tokens with their top logprobs when the server gives them) and its cut points. Here,
below the gates, because the probe that asks for the prefills needs the cuts mid-read; the
judgment (does prefill continue the decode?) is rackgate/gates/consistency.py's."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decoded:
    text: str
    tokens: tuple[str, ...] = ()              # when the server gave tokens (logprobs)
    top: tuple[dict[str, float], ...] = ()    # per token {token: logprob}, when given


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
