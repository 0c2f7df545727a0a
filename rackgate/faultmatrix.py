"""The fault matrix with its derived cases: the cases of rackgate/catalogue/matrix/*.toml, plus a
default case for every sim fault that has none there and whose row is a declared check (the
registry, rackgate/registry/): the fault at its default place fails the declared check's item there
(a per-node check's item on the target node; a per-GPU check's on the target GPU; a per-rank check's
on the ranks the fault's rank behaviour picks of the target node, as the sim rack numbers them; a
per-server check's one item; a per-pair check's on every ubench07 pair of the target node: a bad
tray fails all its pairs) and nothing else, run as `-m <the row's first marker>` over the check's
own items (the row's id as the case's path: every place of it, so cases of different rows can share
a suite run). A fault with consequences elsewhere, or one that must pass, keeps an explicit case.

    python -m rackgate.faultmatrix          # every case (explicit and derived) as JSON

The sim's faults come through rackgate/simrack.py (the product's one way into the sim).
"""
from __future__ import annotations

import json
import sys
from typing import Any, Protocol

from . import registry, simrack
from .catalogue import matrix, row
from .fabric.pairs import triangles
from .gates.declare import Check
from .probes.pair_runs import pair_id
from .registry import item_id


class Fault(Protocol):
    """What a derived case reads of a sim fault (rackgate/sim/faults)."""
    name: str
    row: str
    target: str
    default: str
    rank: Any  # its rank behaviour (.pick: a slice of the target node's ranks; None: all), or None

DERIVED = "derived"  # the `source` of a derived case
def rank_items(c: Check[Any], f: Fault) -> list[str]:
    """A per-rank check's items that fault f's rank behaviour hits at its default node, as the
    sim rack numbers the ranks ([] when the fault hits no rank of a node)."""
    if f.rank is None or f.target != "node" or not f.default:
        return []
    node = f.default.partition(":")[0]
    ranks = sorted(r for r, n in simrack.rank_nodes().items() if n == node)
    pick = f.rank.pick
    return [item_id(c, f"{node}-dp{r}") for r in (ranks[pick[0]:pick[1]] if pick else ranks)]


def pairs_of(node: str, nodes: list[str] | None = None) -> list[str]:
    """The ubench07 pairs (ids) `node` takes part in, of `nodes` (default: the sim rack's)."""
    names = nodes if nodes is not None else simrack.node_names()
    return [pair_id(p) for p in triangles(names) if node in p]


def derived_case(f: Fault, c: Check[Any]) -> dict[str, Any] | None:
    """The default case of fault f on its row's declared check c (None when there is no single
    item to name: a node-wide fault on a per-GPU check, a rack-wide fault on a per-node one)."""
    case = {"fault": f.name, "row": f.row, "select": row(f.row).markers[0], "paths": [c.row],
            "source": DERIVED}
    if c.per == "server":
        return {**case, "fail": [item_id(c)]}
    if c.per == "rank":
        ranks = rank_items(c, f)
        return {**case, "fail": ranks} if ranks else None
    if f.target not in ("node", "gpu") or not f.default:
        return None
    node, _, gpu = f.default.partition(":")
    per_gpu = c.per in ("gpu", "rack-gpu")
    if per_gpu and not (f.target == "gpu" and gpu.isdigit()):
        return None
    fail = [item_id(c, p) for p in pairs_of(node)] if c.per == "pair" else \
        [item_id(c, node, int(gpu) if per_gpu else None)]
    return {**case, "fail": fail}


def derived(explicit: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cased = {c["fault"].partition("@")[0] for c in explicit}
    checks = registry.checks()
    out = []
    for f in sorted(simrack.all_faults().values(), key=lambda f: (f.row, f.name)):
        if f.name not in cased and f.row in checks:
            case = derived_case(f, checks[f.row])
            if case is not None:
                out.append(case)
    return out


def cases() -> list[dict[str, Any]]:
    """Every case: the explicit ones, then the derived ones."""
    explicit = matrix()
    return explicit + derived(explicit)


if __name__ == "__main__":
    json.dump(cases(), sys.stdout, indent=1)
    sys.stdout.write("\n")
