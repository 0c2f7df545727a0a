"""What a degenerate answer's text looks like, read from the text alone (the signatures SRV-SANITY
names, rackgate/gates/sanity.py): every character '!', one token repeated, a repetition loop (one
fragment repeated back to back over most of the text: `BlockBlockBlock...`, which a word count sees
as one word -- tenstorrent/tt-xla #5892 --, a phrase or a cycle of n-grams looping), empty. Here, below the
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
    return _one_token(TOKENISH.findall(stripped)) or _loop(stripped[:LOOP_TEXT])


# A repetition loop: a fragment of at most LOOP_FRAGMENT characters, not all whitespace, repeated
# back to back at least LOOP_COPIES times over at least LOOP_MIN characters; the text is degenerate
# when such loops cover LOOP_SHARE of it or more. A phrase a fluent answer repeats once (two copies)
# is no loop; a run of spaces (indentation) is none; a table's rule line is a small share of its table.
LOOP = re.compile(r"(.{1,100}?)\1{2,}", re.S)
LOOP_FRAGMENT, LOOP_COPIES, LOOP_MIN, LOOP_SHARE = 100, 3, 16, 0.5
LOOP_TEXT = 16384  # characters of a whole answer judged (a loop that covers half of an answer starts in them)
VISIBLE = re.compile(r"\S")


def _loop(stripped: str) -> str | None:
    """Why this text is a repetition loop, or None."""
    if len(stripped) < LOOP_MIN:
        return None
    spans = [(m.end() - m.start(), m.group(1)) for m in LOOP.finditer(stripped)
             if m.end() - m.start() >= LOOP_MIN and VISIBLE.search(m.group(1))]
    covered = sum(n for n, _ in spans)
    if not spans or covered < LOOP_SHARE * len(stripped):
        return None
    n, frag = max(spans)
    return (f"a repetition loop: {frag[:40]!r} repeated {n // len(frag)} times back to back "
            f"({100 * covered // len(stripped)}% of the text in loops)")


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
    said = _one_token(toks) if len(toks) >= STREAM_TOKENS else None
    # a loop is looked for once every STREAM_LOOP_STEP characters (each prefix once: cached)
    upto = len(stripped) // STREAM_LOOP_STEP * STREAM_LOOP_STEP
    return said or (_looped(stripped[:upto]) if upto else None)


STREAM_LOOP_STEP = 64


@lru_cache(maxsize=1024)
def _looped(prefix: str) -> str | None:
    return _loop(prefix)


__all__ = ["LOOP_COPIES", "LOOP_MIN", "LOOP_SHARE", "STREAM_BANG", "STREAM_TOKENS", "STREAM_WINDOW", "TOKENISH",
           "degenerate", "degenerate_so_far"]
