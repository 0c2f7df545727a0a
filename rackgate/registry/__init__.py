"""The registry: every declared check (rackgate/gates/declare.py), collected once, and the one way
to run a declaration on a place. Its own layer, above probes and gates and below everything that
consumes checks, which all take them from here, never from the gates' modules:

- the pytest items: `rackgate/checks/declared.py`'s collector makes one item per check and place
  from `checks()` and runs each with `judge_at` (a "rack" check's read across the nodes: `read_across`);
- the survey's cells: `rackgate/survey/tray.py` runs the same declarations on one tray (`on_tray`:
  the same probe and judge, `Across` of that tray alone for a "rack" check; a "rack-gpu" check is
  judged again across every tray read, `across_trays`);
- the fault matrix: `rackgate/faultmatrix.py` derives a fault's default case from `checks()` and
  names its item with `item_id`;
- the catalogue page: `rackgate/report/catalogue_page.py` names each row's probe and judge
  (`declared_as`);
- the fleet's drain hints: `rackgate/fleet/drain.py` words a drain's reason with `drain_hint`
  (the row, its catalogue action class, what was seen).
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ..gates import declare
from ..gates.declare import Check, qualname
from ..ids import SERVER
from .run import Judged, Place, across_trays, judge_at, judge_on, on_tray, read_across


def checks() -> dict[str, Check[Any]]:
    """Every declared check by row id (the modules of rackgate/gates/ declare theirs on import)."""
    from .. import gates
    for mod in pkgutil.iter_modules(gates.__path__):
        importlib.import_module(f"{gates.__name__}.{mod.name}")
    return declare.registered()


def item_id(c: Check[Any], node: str = "", gpu: int | None = None) -> str:
    """A declared check's item id, its row and its place (rackgate/ids.py): at a node, PLAT-SHM::node2;
    at one GPU of it, FAB-STATE::node2-card3; at a pair or a rank, `node` is its id (node1-node2,
    node3-dp9); the server's one item, SRV-BOOT::server."""
    if c.per == "server":
        return f"{c.row}::{SERVER}"
    place = f"{node}-card{gpu if gpu is not None else 0}" if c.per in ("gpu", "rack-gpu") else node
    return f"{c.row}::{place}"


def server_rows() -> frozenset[str]:
    """The rows of "server" checks (one item, at the server: SRV-BOOT::server), for reading an old
    id without a parameter as that item (rackgate/ids.py check_id)."""
    return frozenset(r for r, c in checks().items() if c.per == "server")


def declared_as() -> dict[str, str]:
    """Row id -> 'probe `probes.shm.stale`, judge `gates.plat.shm_segments`' of each declared check."""
    return {rid: f"probe `{qualname(c.probe)}`, judge `{qualname(c.judge)}`" for rid, c in checks().items()}


def drain_hint(row_id: str, seen: str) -> str:
    """A drain's reason for a row's finding: 'PLAT-RAS [service-hardware]: <seen>' -- the row and its
    catalogue action class (what the tray needs: service-hardware, reboot-or-reload-driver, ...),
    then what was seen; the bare row for a row the catalogue does not know."""
    from ..catalogue import UnknownRow, row
    try:
        action = f" [{row(row_id).action_class}]"
    except UnknownRow:
        action = ""
    return f"{row_id}{action}: {seen}"


__all__ = ["Judged", "Place", "across_trays", "checks", "declared_as", "drain_hint", "item_id", "judge_at",
           "judge_on", "on_tray", "read_across", "server_rows"]
