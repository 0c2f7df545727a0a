"""JSON lines (one JSON object a line, blank lines allowed): docker's `--format '{{json .}}'`
output, the GSM8K data files. Imports nothing from the package."""
from __future__ import annotations

import json
from typing import Any


class BadLine(ValueError):
    """Line n is not a JSON object; `why` says how ("is not JSON (...)", "is not a JSON object")."""

    def __init__(self, n: int, why: str, line: str):
        super().__init__(f"line {n} {why}: {line[:120]!r}")
        self.n, self.why, self.line = n, why, line


def objects(text: str) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line as (its line number, the object); BadLine at the first that is not one."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise BadLine(n, f"is not JSON ({e.msg})", line) from None
        if not isinstance(obj, dict):
            raise BadLine(n, "is not a JSON object", line)
        out.append((n, obj))
    return out
