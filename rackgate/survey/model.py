"""What the survey saw on a tray: one cell per check, each a `rackgate.verdicts.Verdict`: pass,
fail or could not observe (`Verdict.word`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..verdicts import Verdict

PASS, FAIL, UNOBSERVED = Verdict.PASSED, Verdict.FAILED, Verdict.UNOBSERVED

# (cell key, catalogue row, column title); the order of the table's columns.
CHECKS: tuple[tuple[str, str, str], ...] = (
    ("reach", "", "reachable"),
    ("gpus", "PLAT-GPUS", "GPUs"),
    ("free", "PLAT-FREE", "free"),
    ("tuned", "PLAT-TUNED", "tuned this boot"),
    ("params", "PLAT-PARAMS", "driver params"),
    ("ras", "PLAT-RAS", "RAS"),
    ("links", "FAB-STATE", "links active"),
    ("accel", "FAB-ACCEL-ID", "accel_id"),
    ("pod", "FAB-POD", "PPOD/VPOD"),
)
ROW = {k: r for k, r, _ in CHECKS}
TITLE = {k: t for k, _, t in CHECKS}


@dataclass(frozen=True)
class Cell:
    status: Verdict   # PASS / FAIL / UNOBSERVED
    seen: str     # what was read (or why it could not be), one line

    @property
    def ok(self) -> bool:
        return self.status == PASS


@dataclass
class TrayReport:
    node: str
    tray: int
    cells: dict[str, Cell] = field(default_factory=dict)
    # the tray's fabric domain (ppod_id, vpod_id) when its links agree and are trained
    domain: tuple[str, str] | None = None
    # per GPU: card -> PASS / FAIL / UNOBSERVED (for the rack map)
    gpus: dict[int, Verdict] = field(default_factory=dict)
    seconds: float = 0.0
    # row -> its places on this tray (registry.Place), for a "rack-gpu" row judged across trays
    places: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return all(c.ok for c in self.cells.values()) and self.domain is not None

    def problems(self) -> list[str]:
        """Each cell that is not a pass, as 'title: seen' (could-not-observe said as such)."""
        out = []
        for key, _, title in CHECKS:
            c = self.cells.get(key)
            if c is None or c.ok:
                continue
            out.append(f"{c.status.word} ({TITLE[key]}): {c.seen}" if c.status is UNOBSERVED else f"{title}: {c.seen}")
        return out
