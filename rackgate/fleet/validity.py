"""How long a result stays evidence enough to act on. `rackgate fleet --remediate` re-checks a
finding past this before it drains anything (a stale finding must not take a healthy tray out).

One function, `expires_at`, so the per-item `judged_at` / `valid_until` of the verdict file can be
read from one place: an item's own `valid_until` when it has one, else its `judged_at` (without it,
the time verdict.json was written: the run's time) plus DEFAULT_VALIDITY_S."""
from __future__ import annotations

import datetime
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEFAULT_VALIDITY_S = 3600.0   # an hour: a finding older than this is looked at again before any action


def _epoch(value: Any) -> float | None:
    """Seconds since the epoch from a number or an ISO 8601 time (a trailing Z read as UTC); None otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            t = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return (t if t.tzinfo else t.replace(tzinfo=datetime.timezone.utc)).timestamp()
    return None


def expires_at(item: Mapping[str, Any], verdict_path: Path, default_s: float = DEFAULT_VALIDITY_S) -> float:
    """When `item` (one of verdict.json's items) stops being evidence to act on, in epoch seconds.
    Without a time and without the file it is 0.0: stale, re-checked."""
    until = _epoch(item.get("valid_until"))
    if until is not None:
        return until
    judged = _epoch(item.get("judged_at"))
    if judged is None:
        try:
            judged = verdict_path.stat().st_mtime
        except OSError:
            return 0.0
    return judged + default_s
