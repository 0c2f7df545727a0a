"""The failure catalogue as data: one source of truth for checks, sim faults, reports.

Rows live in the area files next to this module (plat.toml, fab.toml, ...). Every check names
its row by id; the report, the fault matrix and the diagnosis text all come from here.
"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
RUNBOOK_URL = "https://github.com/ROCm/ATOM/blob/main/recipes/Kimi-K3-455-wideEP.md"
AREAS = {"PLAT": "platform", "FAB": "fabric", "SRV": "serving", "BENCH": "serving", "ACC": "accuracy",
         "REG": "regression"}
ROW_FILES = ("plat", "fab", "srv", "bench", "acc", "reg")
_FIELDS = {"id", "title", "markers", "scope", "observe", "healthy", "signatures", "meaning",
           "action", "anchor", "severity", "order", "needs"}
# Rows without an `order`: platform and fabric first (they launch nothing), the rest after the
# decisive server checks and before the costly ones.
DEFAULT_ORDER = 60
FAMILY_ORDER = {"PLAT": 1, "FAB": 2}


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    markers: tuple[str, ...]
    scope: str
    observe: str
    healthy: str
    signatures: tuple[str, ...]
    meaning: str
    action: str
    anchor: str
    severity: str = "normal"
    family: str = field(default="")
    # Run order and dependencies (see the header of srv.toml): `order` sorts the session's items
    # (lower first, stable); `needs` names rows whose FAILED or ERROR makes this row's items ERROR
    # at once with rackgate.errors.NotRun instead of spending minutes.
    order: int = DEFAULT_ORDER
    needs: tuple[str, ...] = ()

    @property
    def area(self) -> str:
        """The epic: platform / fabric / serving / accuracy."""
        return AREAS[self.family]

    @property
    def runbook_link(self) -> str:
        return f"{RUNBOOK_URL}#{self.anchor}"


def matrix() -> list[dict]:
    """The fault matrix: every case of matrix/<area>.toml (see the header of those files)."""
    cases = []
    for path in sorted((HERE / "matrix").glob("*.toml")):
        for case in tomllib.loads(path.read_text()).get("case", []):
            cases.append({**case, "source": path.name})
    return cases


class UnknownRow(KeyError):
    def __str__(self) -> str:  # KeyError's repr-quoting makes one-line messages ugly
        return self.args[0]


@functools.cache
def rows() -> dict[str, Row]:
    out: dict[str, Row] = {}
    for path in (HERE / f"{name}.toml" for name in ROW_FILES):
        for raw in tomllib.loads(path.read_text())["row"]:
            bad = set(raw) - _FIELDS
            if bad:
                raise ValueError(f"{path.name}: row {raw.get('id')}: unknown field(s) {sorted(bad)}")
            if raw["id"] in out:
                raise ValueError(f"{path.name}: duplicate catalogue id {raw['id']}")
            family = raw["id"].split("-", 1)[0]
            raw.setdefault("order", FAMILY_ORDER.get(family, DEFAULT_ORDER))
            out[raw["id"]] = Row(**{**raw, "markers": tuple(raw["markers"]),
                                    "signatures": tuple(raw["signatures"]),
                                    "needs": tuple(raw.get("needs", ()))}, family=family)
    for r in out.values():
        unknown = [n for n in r.needs if n not in out]
        if unknown:
            raise ValueError(f"row {r.id}: needs unknown row(s) {unknown}")
        late = [n for n in r.needs if out[n].order >= r.order]
        if late:
            raise ValueError(f"row {r.id} (order {r.order}): needs {late}, which do not run before it")
    return out


def row(row_id: str) -> Row:
    try:
        return rows()[row_id]
    except KeyError:
        raise UnknownRow(f"unknown catalogue id {row_id!r}; known: {', '.join(sorted(rows()))}") from None
