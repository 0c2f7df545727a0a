"""How long a result stays evidence enough to act on. `rackgate fleet --remediate` re-checks a
finding past this before it drains anything (a stale finding must not take a healthy tray out).

One function, `expires_at`, over the catalogue's per-row validity (rackgate/report/validity.py,
the same rule `rackgate status` and `rackgate watch` read): an item's own `valid_until` when it has
one; else its `judged_at` plus its row's validity; without a time, the time verdict.json was
written (the run's time) plus DEFAULT_VALIDITY_S."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..report import validity

DEFAULT_VALIDITY_S = 3600.0   # an hour: a finding with no time of its own is looked at again past this


def expires_at(item: Mapping[str, Any], verdict_path: Path, default_s: float = DEFAULT_VALIDITY_S) -> float:
    """When `item` (one of verdict.json's items) stops being evidence to act on, in epoch seconds.
    Without a time and without the file it is 0.0: stale, re-checked."""
    until = validity.when(str(item.get("valid_until") or ""))
    if until is not None:
        return until.timestamp()
    judged = validity.when(str(item.get("judged_at") or ""))
    if judged is not None:
        return (judged + validity.of(str(item.get("row") or "")).span).timestamp()
    try:
        return verdict_path.stat().st_mtime + default_s
    except OSError:
        return 0.0
