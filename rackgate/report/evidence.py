"""Evidence text for the report: the log lines around a signature, aligned tables.

Pure functions; rackgate/fixtures/labels.py's `evidence` fixture attaches what they return.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence


def excerpt(text: str, signature: str | re.Pattern[str], before: int = 6, after: int = 6, limit: int = 5) -> str:
    """The lines around each line matching `signature` (a substring or a compiled regex), with
    line numbers and the matching line marked '>'; at most `limit` excerpts. Empty when nothing
    matches."""
    lines = text.splitlines()
    hit = (signature.search if isinstance(signature, re.Pattern) else (lambda l: signature in l))
    hits = [i for i, l in enumerate(lines) if hit(l)][:limit]
    if not hits:
        return ""
    spans: list[list[int]] = []
    for i in hits:
        lo, hi = max(0, i - before), min(len(lines), i + after + 1)
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = hi
        else:
            spans.append([lo, hi])
    width = len(str(len(lines)))
    out: list[str] = []
    for lo, hi in spans:
        if out:
            out.append("...")
        out += [f"{'>' if i in hits else ' '} {i + 1:>{width}} | {lines[i]}" for i in range(lo, hi)]
    return "\n".join(out)


def table(rows: Iterable[Sequence[object]], headers: Sequence[str]) -> str:
    """Rows as an aligned plain-text table (numbers as given; None as '-')."""
    body = [[("-" if c is None else f"{c:.4g}" if isinstance(c, float) else str(c)) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in body)) if body else len(str(h)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*headers), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in body])
