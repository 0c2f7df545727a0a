"""What a degenerate answer's text looks like, read from the text alone (the signatures SRV-SANITY
names, rackgate/gates/sanity.py): every character '!', one token repeated, empty. Here, below the
gates, because the probes that ask the server cut a stream on them as it arrives (`degenerate_so_far`);
the judgment over many answers is gates/sanity.py's."""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

TOKENISH = re.compile(r"\w+|[^\w\s]")


def degenerate(text: str) -> str | None:
    """Why this text is degenerate, or None if it looks like language."""
    stripped = text.strip()
    if not stripped:
        return "empty text"
    if set(stripped) <= {"!"}:
        return f"every character is '!' ({len(stripped)} of them)"
    return _one_token(TOKENISH.findall(stripped))


def _one_token(toks: list[str]) -> str | None:
    """Why these tokens are one token repeated (it is 80 % of them or more), or None. Counted only
    when the distinct tokens leave room for it: with d distinct tokens the commonest is at most
    n - (d - 1) of n, under 80 % when 5 (d - 1) > n -- language, nearly always (asked after every
    chunk of every streamed answer, the count was most of a quick gate's client CPU)."""
    if len(toks) < 4 or 5 * (len(set(toks)) - 1) > len(toks):
        return None
    tok, n = Counter(toks).most_common(1)[0]
    if n / len(toks) >= 0.8:
        return f"one token repeated: {tok!r} is {n} of {len(toks)} tokens"
    return None


# A stream is called degenerate before it ends once this much of it is one character or token:
# a '!' answer decides after STREAM_BANG characters, a one-token loop after STREAM_TOKENS tokens.
STREAM_BANG = 8
STREAM_TOKENS = 16


STREAM_WINDOW = 1024  # characters: the degenerate signatures show from the first tokens


def degenerate_so_far(text: str) -> str | None:
    """Why a stream's text so far is already degenerate (reading on cannot make it language),
    or None: not (yet). Judged on its first STREAM_WINDOW characters (asked after every chunk of
    a 12288-token answer, it stays cheap); the whole answer is judged at its end (`degenerate`),
    as is an empty one."""
    return _window(text[:STREAM_WINDOW].strip())


# Once a stream's first STREAM_WINDOW characters have arrived, every later chunk asks about the same
# window: its verdict is remembered (a dict lookup, not two tokenisations and a count of ~250 tokens
# per chunk: ~100 us, i.e. ~16 CPU s of a healthy quick gate's ~1,350-chunk answers on the sim,
# docs/performance.md wave 9). Enough entries for every stream in flight (32 by default).
@lru_cache(maxsize=1024)
def _window(stripped: str) -> str | None:
    if len(stripped) >= STREAM_BANG and set(stripped) <= {"!"}:
        return degenerate(stripped)
    toks = TOKENISH.findall(stripped)
    # >= STREAM_TOKENS tokens: not empty, and not all '!' (STREAM_BANG characters or more, above),
    # so degenerate(stripped) is its token count, on these tokens
    return _one_token(toks) if len(toks) >= STREAM_TOKENS else None


__all__ = ["STREAM_BANG", "STREAM_TOKENS", "STREAM_WINDOW", "TOKENISH", "degenerate", "degenerate_so_far"]
