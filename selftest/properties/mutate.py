"""Hypothesis strategies that start from REAL output and break it the ways real output breaks:
truncated, CRLF, ANSI colour, extra or missing columns, reordered fields, junk bytes, huge numbers,
N/A where a value was, lines lost or repeated. `garbage()` is text with no real line in it."""
from __future__ import annotations

import os
import random
import re

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Default self-tests: 500 examples per parser, fixed seed;
# benchmark mode: 50,000 (RACKGATE_PROPERTY_EXAMPLES=50000, or benchmarks/properties.py).
EXAMPLES = int(os.environ.get("RACKGATE_PROPERTY_EXAMPLES", "500"))
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=False)

ANSI = ["\x1b[0m", "\x1b[1;31m", "\x1b[33m", "\x1b[2K", "\x1b]0;title\x07", "\x1b[?25l"]
HUGE = ["9" * 40, "18446744073709551616", "1e999", "-1e999", "nan", "inf", "-0", "4294967295", "9" * 400,
        "0x" + "f" * 40, "1.2.3", "1,000,000"]
NA = ["N/A", "NA", "n/a", "-", "", "None", "null"]
_NUM = re.compile(r"-?\d+(?:\.\d+)?")
_TOKEN = re.compile(r"\S+")


KINDS = ("truncate", "crlf", "ansi", "drop_token", "dup_token", "swap_tokens", "junk", "huge", "na", "drop_line",
         "dup_line", "shuffle_lines", "cr", "indent")


def _junk(r: random.Random) -> str:
    n = r.randrange(0, 40)
    if r.random() < 0.5:
        return bytes(r.randrange(256) for _ in range(n)).decode("utf-8", "replace")
    return "".join(chr(r.choice((r.randrange(32, 127), r.randrange(0, 0x2FF), r.randrange(0x370, 0x3000))))
                   for _ in range(n))


def apply(text: str, kind: str, seed: int) -> str:
    """One mutation of `text`, its positions and values chosen by `seed` (so hypothesis draws two
    numbers per mutation and the run stays fast and reproducible)."""
    r = random.Random(seed)
    lines = text.split("\n")
    if kind == "truncate":
        return text[:r.randrange(0, len(text) + 1)]
    if kind == "crlf":
        return text.replace("\n", "\r\n")
    if kind in ("cr", "ansi", "junk"):
        i = r.randrange(0, len(text) + 1)
        ins = "\r" if kind == "cr" else r.choice(ANSI) if kind == "ansi" else _junk(r)
        return text[:i] + ins + text[i:]
    if kind == "indent":
        i = r.randrange(0, len(lines))
        lines[i] = r.choice(["  ", "\t", "        ", ""]) + lines[i].lstrip()
        return "\n".join(lines)
    if kind in ("drop_token", "dup_token", "swap_tokens"):
        toks = list(_TOKEN.finditer(text))
        if not toks:
            return text
        a = r.choice(toks)
        if kind == "drop_token":
            return text[:a.start()] + text[a.end():]
        if kind == "dup_token":
            return text[:a.end()] + " " + a.group() + text[a.end():]
        b = r.choice(toks)
        if a.start() > b.start():
            a, b = b, a
        if a.start() == b.start():
            return text
        return text[:a.start()] + b.group() + text[a.end():b.start()] + a.group() + text[b.end():]
    if kind in ("huge", "na"):
        nums = list(_NUM.finditer(text))
        if not nums:
            return text
        m = r.choice(nums)
        return text[:m.start()] + r.choice(HUGE if kind == "huge" else NA) + text[m.end():]
    if kind == "drop_line" and len(lines) > 1:
        del lines[r.randrange(0, len(lines))]
    elif kind == "dup_line":
        i = r.randrange(0, len(lines))
        lines.insert(i, lines[i])
    elif kind == "shuffle_lines":
        r.shuffle(lines)
    return "\n".join(lines)


def _mutate(sample: str, seed: int) -> str:
    """0..4 mutations of a real sample, every choice made by `seed`."""
    r = random.Random(seed)
    for _ in range(r.randrange(0, 5)):
        sample = apply(sample, r.choice(KINDS), r.getrandbits(32))
    return sample


def mutated(samples: list[str]):
    """A real sample with 0..4 mutations applied in turn. Hypothesis draws the sample and one seed
    (its per-example cost is the floor: this keeps 2,000 examples per parser fast); the seed
    picks the mutations, so a failure prints the exact input and replays from it."""
    return st.builds(_mutate, st.sampled_from(samples), st.integers(0, 2 ** 64 - 1))


def _garbage(seed: int, lines: int) -> str:
    r = random.Random(seed)
    return "\n".join(" ".join(_junk(r)[:12] for _ in range(r.randrange(0, 7))) for _ in range(lines))


def garbage():
    """Text with no real line in it: lines of junk words, junk bytes as the transport decodes them."""
    return st.builds(lambda seed: _garbage(seed, seed % 9), st.integers(0, 2 ** 64 - 1))


def cases(samples: list[str]):
    """(text, is_garbage): mostly mutated real output, one in eight pure garbage."""
    return st.builds(lambda seed, sample: (_garbage(seed, seed % 9), True) if seed % 8 == 0
                     else (_mutate(sample, seed), False),
                     st.integers(0, 2 ** 64 - 1), st.sampled_from(samples))
