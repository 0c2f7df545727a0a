"""Command lines as the rack file writes them: split into words, and the flags they set.

One reader for the launch command (SRV-LAUNCH-LINT) and the benchmark command (BENCH-*), so
the two can never disagree about what a command says.
"""
from __future__ import annotations

import shlex


def split(command: str) -> list[str]:
    """The words of a shell command (backslash-newline continuations joined). Raises ValueError
    when the quoting does not parse."""
    return shlex.split(command.replace("\\\n", " "))


def flags(words: list[str]) -> dict[str, str | None]:
    """--flag value / --flag=value / -f value / bare --flag -> {flag: value, or None when bare}.
    Names lose their dashes, and `_` is `-` (ATOM's and aiperf's parsers treat them alike:
    --kv_cache_dtype is --kv-cache-dtype). A later occurrence wins, as in argparse."""
    out: dict[str, str | None] = {}
    for i, w in enumerate(words):
        if not w.startswith("-") or w == "-" or w == "--":
            continue
        name, eq, val = w.partition("=")
        name = name.lstrip("-").replace("_", "-")
        if eq:
            out[name] = val
        elif i + 1 < len(words) and not words[i + 1].startswith("-"):
            out[name] = words[i + 1]
        else:
            out[name] = None
    return out
