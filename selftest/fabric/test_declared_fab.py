"""The FAB rows as declarations (rackgate/gates/fabric.py): the "pair" scope's item ids and derived
matrix cases, and FAB-COLLECTIVE's blame across the rack (one rack-wide run, judged per node: the
node whose own worlds failed is the one FAILED; the others' failed run across nodes is could not
observe there, never a second fault)."""
from types import SimpleNamespace as NS

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.faultmatrix import derived_case, item_id, pairs_of
from rackgate.gates import fabric as judge
from rackgate.gates.declare import Across
from rackgate.probes.collective import NodeRun, ProbeOutput, World
from rackgate.probes.pair_runs import PairRun, Side
from rackgate.probes.target import On, OnPair
from rackgate.registry import checks as declared

pytestmark = pytest.mark.unit

NODES = ["node1", "node2", "node3", "node4"]
PAIR_ROWS = {"FAB-P2P", "FAB-BW", "FAB-DMESG"}


def test_the_ubench07_rows_are_declared_per_pair_and_leftover_per_node():
    checks = declared()
    assert {r for r, c in checks.items() if c.per == "pair"} >= PAIR_ROWS
    assert checks["FAB-LEFTOVER"].per == "node" and checks["FAB-UNPOPULATED"].per == "node"
    assert checks["FAB-COLLECTIVE"].per == "rack" and checks["FAB-TRANSPORT"].per == "node"


def test_a_pair_item_is_named_for_its_pair_and_a_node_fault_fails_every_pair_of_the_node():
    p2p = declared()["FAB-P2P"]
    assert item_id(p2p, "node1-node2") == "rackgate/checks/test_declared.py::test_fab_p2p[node1-node2]"
    assert pairs_of("node3", NODES) == ["node2-node3", "node3-node1"]  # a bad tray fails both its pairs
    assert pairs_of("node4", NODES) == ["node4-node1", "node2-node4"]
    fault = NS(name="bad-tray", row="FAB-P2P", target="node", default="node3")
    assert derived_case(fault, p2p)["fail"] == [item_id(p2p, p) for p in pairs_of("node3")]
    assert derived_case(NS(name="x", row="FAB-P2P", target="rack", default=""), p2p) is None


def test_on_pair_names_both_nodes():
    rack = NS(gpus_per_node=4)
    on = OnPair(rack, On(rack, None, "node2"), On(rack, None, "node4"))
    assert (on.id, on.where, on.key) == ("node2-node4", "node2<->node4", "node2-node4")
    with pytest.raises(RuntimeError, match="without the session's ubench07 rounds"):
        on.ubench("p2p")  # our bug (an item made without the rounds), never a verdict


def _run(tool="p2p", error=""):
    return PairRun(tool, ("node1", "node2"), Side("node1", "exporter", "ualoe_p2p.exe export"),
                   Side("node2", "importer", "ualoe_p2p.exe import"), error=error)


def test_a_pair_the_suite_could_not_run_is_could_not_observe_naming_the_pair():
    with pytest.raises(CouldNotObserve, match=r"node1<->node2: p2p could not be run: node node2: ssh said no"):
        judge.p2p_item(_run(error="node node2: ssh said no"), NS(), "node1<->node2")


# --- FAB-COLLECTIVE: one rack-wide run, judged per node -----------------------------------------
RACK = NS(nodes=[NS(name=n) for n in NODES[:3]],
          fabric=NS(collective_world_sizes=[1, 2], collective_bw_bytes=0, collective_busbw_floor_gbps=0))


def _node(name, own="ok", far="ok"):
    worlds = {ws: World(ws, "ok" if ws == 1 else own, ws if own == "ok" or ws == 1 else 0) for ws in (1, 2)}
    for ws, w in worlds.items():
        if w.status == "ok":
            w.results = {r: "result=3 expect=3" for r in range(ws)}
    out = ProbeOutput(worlds, ["P2P/CUMEMMNNVL"], [], [], True, "2.5.1", World(6, far, 6 if far == "ok" else 0))
    return NodeRun(name, f"$ probe on {name}", 0, "RGCOLL-END", out)


def _across(node, runs):
    return Across(node, {r.node: r for r in runs}, {})


def test_collective_blames_the_node_whose_own_worlds_failed():
    runs = [_node("node1", far="timeout"), _node("node2", own="timeout", far="timeout"), _node("node3", far="timeout")]
    found = judge.collective_item(_across("node2", runs), RACK, "node2")
    assert found and "ws=2: timed out" in found[0], found
    for other in ("node1", "node3"):
        with pytest.raises(CouldNotObserve, match=r"but node2 did not complete its own worlds .*: judged there"):
            judge.collective_item(_across(other, runs), RACK, other)


def test_collective_across_waiting_for_a_node_that_could_not_run_is_could_not_observe():
    dead = _node("node1")
    dead.out.started = False  # its probe never started (python missing, the container gone)
    runs = [dead, _node("node2", far="timeout"), _node("node3", far="timeout")]
    with pytest.raises(CouldNotObserve, match=r"node1: the collective probe did not start"):
        judge.collective_item(_across("node1", runs), RACK, "node1")
    for other in ("node2", "node3"):
        with pytest.raises(CouldNotObserve, match=r"but node1 did not complete its own worlds"):
            judge.collective_item(_across(other, runs), RACK, other)
    unseen = Across("node2", {r.node: r for r in runs[1:]}, {"node1": CouldNotObserve("node node1: ssh said no")})
    with pytest.raises(CouldNotObserve, match=r"but node1 did not complete"):
        judge.collective_item(unseen, RACK, "node2")


def test_collective_fails_every_node_whose_run_across_failed_when_no_own_world_did():
    runs = [_node("node1"), _node("node2", far="timeout"), _node("node3")]
    assert judge.collective_item(_across("node1", runs), RACK, "node1") == []
    found = judge.collective_item(_across("node2", runs), RACK, "node2")
    assert found and found[0].startswith("across nodes: ws=6 across nodes: timed out"), found


def test_collective_without_a_result_for_a_world_is_could_not_observe():
    run = _node("node1")
    del run.out.worlds[2]
    with pytest.raises(CouldNotObserve, match=r"node1: the collective probe reported no result for ws=2"):
        judge.collective_item(_across("node1", [run]), RACK, "node1")
