"""The registry (rackgate/registry/): the one way a declaration runs on a place, which the pytest
items and the survey's cells both take -- the probe's facts, the judge's findings, its refusal kept
after the evidence, a "rack" check judged across the tray alone, the survey's pinned facts -- and the
drain reason it words from the catalogue row."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from rackgate import config, registry, simrack
from rackgate.errors import CouldNotObserve
from rackgate.gates.declare import Across, Check, Shown
from rackgate.probes.target import On

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Seen:
    node: str
    now: float = 0.0


def _read(on: On) -> Seen:
    if on.node == "node3":
        raise CouldNotObserve("node node3: tool missing")
    return Seen(on.node)


def _judge(got: Seen, rack: Any, where: str) -> list[str]:
    if got.node == "node4":
        raise CouldNotObserve("node node4: nothing to judge")
    return [f"stale on {where} at {got.now:g}"] if got.node == "node2" else []


def _shows(got: Any, rack: Any) -> list[Shown]:
    return [Shown("seen", repr(got))]


def _across(got: Across[Seen], rack: Any, where: str) -> list[str]:
    return [f"{where} judged with {sorted(got.facts)}"]


NODE = Check[Any]("PLAT-SHM", "node", probe=_read, judge=_judge, shows=_shows)
RACK = Check[Any]("FAB-POD", "rack", probe=_read, judge=_across, shows=_shows)


@pytest.fixture(scope="module")
def rack() -> config.Rack:
    return config.load(simrack.shipped_rack())


def test_a_node_check_on_a_tray_is_its_findings_or_why_it_could_not_look(rack: config.Rack) -> None:
    host: Any = object()   # the planted probe reads nothing through it
    (healthy,) = registry.on_tray(NODE, host, "node1", rack)
    (faulted,) = registry.on_tray(NODE, host, "node2", rack, {"now": 42.0})   # the survey's one clock
    (unseen,) = registry.on_tray(NODE, host, "node3", rack)
    (refused,) = registry.on_tray(NODE, host, "node4", rack)
    assert healthy.judged is not None and healthy.judged.findings == [] and healthy.error is None
    assert faulted.judged is not None and faulted.judged.findings == ["stale on node2 at 42"]
    assert unseen.judged is None and str(unseen.error) == "node node3: tool missing"
    # the judge's refusal comes after the evidence of what it was given
    assert refused.judged is not None and str(refused.judged.error) == "node node4: nothing to judge"
    assert [s.name for s in refused.judged.shown] == ["seen"]


def test_a_rack_check_on_a_tray_is_judged_across_that_tray_alone(rack: config.Rack) -> None:
    host: Any = object()
    (place,) = registry.on_tray(RACK, host, "node2", rack)
    assert place.judged is not None and place.judged.findings == ["node2 judged with ['node2']"]


def test_an_item_and_a_cell_judge_alike(rack: config.Rack) -> None:
    """The items' judge_on and the survey's on_tray give the same findings for the same place."""
    host: Any = object()
    for node in ("node1", "node2"):
        item = registry.judge_on(NODE, On(rack, host, node))
        (cell,) = registry.on_tray(NODE, host, node, rack)
        assert cell.judged is not None and item.findings == cell.judged.findings


def test_the_registry_holds_every_declared_row_once_and_names_its_items() -> None:
    checks = registry.checks()
    assert checks and all(rid == c.row for rid, c in checks.items())
    shm = checks["PLAT-SHM"]
    assert registry.item_id(shm, "node2") == "PLAT-SHM::node2"
    assert registry.item_id(checks["FAB-STATE"], "node2", 3) == "FAB-STATE::node2-card3"
    assert registry.item_id(checks["SRV-BOOT"]) == "SRV-BOOT::server"
    assert set(registry.declared_as()) == set(checks)


def test_a_drain_reason_names_the_row_its_action_and_what_was_seen() -> None:
    assert registry.drain_hint("PLAT-RAS", "gpu1: 4424 retired pages") == "PLAT-RAS [service-hardware]: gpu1: 4424 retired pages"
    assert registry.drain_hint("NOT-A-ROW", "x") == "NOT-A-ROW: x"


# What one item of a declared check covers, as the catalogue's `scope` names it: a "rack" check's
# item is a node judged across the rack, a "rack-gpu" check's a GPU.
ITEM_COVERS = {"node": "node", "rack": "node", "gpu": "gpu", "rack-gpu": "gpu", "pair": "pair",
               "server": "server", "rank": "rank"}


def test_each_rows_scope_says_what_one_of_its_items_covers():
    from rackgate.catalogue import rows
    wrong = [f"{rid}: catalogue scope {r.scope!r}, declared per {c.per!r} (an item covers a {ITEM_COVERS[c.per]})"
             for rid, r in rows().items() if (c := registry.checks().get(rid)) and r.scope != ITEM_COVERS[c.per]]
    assert not wrong, "\n".join(wrong)
