"""The FAB rows as declarations (rackgate/gates/fabric.py): the "pair" scope's item ids and derived
matrix cases, FAB-ACCEL-ID's and FAB-TRAINING's per-GPU judgments across the rack ("rack-gpu": a
duplicate on another node, amd-smi's view, the node's peers, the recorded baseline; the survey's
pass across trays), and FAB-COLLECTIVE's blame across the rack (one rack-wide run, judged per node: the
node whose own worlds failed is the one FAILED; the others' failed run across nodes is could not
observe there, never a second fault)."""
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.faultmatrix import derived_case, item_id, pairs_of
from rackgate.gates import fabric as judge
from rackgate.gates.declare import Across
from rackgate.probes.amdsmi import FabricGpu
from rackgate.probes.collective import NodeRun, ProbeOutput, World
from rackgate.probes.drm import Card
from rackgate.probes.fabric_fields import Numbered
from rackgate.probes.pair_runs import PairRun, Side
from rackgate.probes.target import On, OnPair, Recorded
from rackgate.probes.ualink import Link, Trained
from rackgate.registry import Place, across_trays, judge_at
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
    assert item_id(p2p, "node1-node2") == "FAB-P2P::node1-node2"
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


def test_collective_across_not_run_for_a_node_the_suite_could_not_reach_is_could_not_observe_naming_it():
    """With a node unreachable the probe runs no world across nodes (rackgate/fabric/collective.py):
    a reachable node's own worlds are still judged -- PASSED there is not claimed, a failed own
    world is FAILED -- and the missing part is could not observe naming the node and why."""
    from dataclasses import replace
    runs = [replace(_node("node2"), across_asked=False), replace(_node("node3", own="timeout"), across_asked=False)]
    for r in runs:
        r.out.across = None
    unseen = {"node1": CouldNotObserve("node node1: ssh said no")}
    with pytest.raises(CouldNotObserve, match=r"node2: the run across nodes was not started, it needs every "
                                              r"node's ranks: node1: node node1: ssh said no"):
        judge.collective_item(Across("node2", {r.node: r for r in runs}, unseen), RACK, "node2")
    found = judge.collective_item(Across("node3", {r.node: r for r in runs}, unseen), RACK, "node3")
    assert found and "ws=2: timed out" in found[0], found
    # FAB-TRANSPORT: the channels across nodes were never set up -- not observed, never healthy
    rack = NS(nodes=RACK.nodes, fabric=NS(collective_world_sizes=[1, 2], healthy_transports=["P2P/CUMEMMNNVL"]))
    with pytest.raises(CouldNotObserve, match=r"node2: NCCL's channels across nodes were not set up"):
        judge.transport_item(runs[0], rack, "node2")


def test_the_probe_runs_across_nodes_only_when_every_node_is_reachable(monkeypatch):
    """Each rank of the run across nodes waits fabric.collective_join_s (30 s on the sim) for ranks
    that never come when a node is unreachable: the probe is then asked for its own worlds only."""
    from rackgate import config
    from rackgate.access import Result
    from rackgate.fabric import collective as fab_collective
    rack = config.load(Path(__file__).resolve().parents[2] / "racks/example-gfx1250.toml")
    asked: dict[str, list[str]] = {}

    class Box:
        def __init__(self, name):
            self.name = name

        def run(self, cmd, timeout, stdin):
            asked[self.name] = cmd
            return Result(self.name, " ".join(cmd), 0, "", "", 0.0)

    monkeypatch.setattr(fab_collective, "container_for", lambda host, node, rack, env: Box(node.name))
    names = [n.name for n in rack.nodes]
    for reachable in (names, names[:-1]):
        asked.clear()
        got = fab_collective.run_all({n: object() for n in reachable}, rack)
        assert sorted(asked) == sorted(reachable) and isinstance(got[names[-1]], Exception) != (reachable == names)
        assert all(("--nnodes" in cmd) == (reachable == names) for cmd in asked.values()), asked


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


# --- FAB-ACCEL-ID, FAB-TRAINING: one item per GPU, judged across the rack ("rack-gpu") -----------
RACK4 = NS(gpus_per_node=4, baseline="racks/sim-baseline.json",
           node=lambda n: NS(tray=int(n.removeprefix("node"))))


def _links(node: str, ids=None, bitmap="0xff", accels="1,2,3"):
    tray = int(node.removeprefix("node"))
    return [Link(card=g, accel_state="active", accel_id=i, accel_id_raw=str(i), link_type="ualoe", ppod_id="p",
                 vpod_id="1", local_accels=accels, station_lane_en_bitmap=bitmap, gpu=g, bdf=f"0000:0{g}:00.0")
            for g, i in enumerate(ids or [4 * (tray - 1) + g for g in range(4)])]


def _smi(links):
    return [FabricGpu(li.gpu, li.bdf, li.accel_id, li.accel_id_raw, "p", "1", "active") for li in links]


def _numbered(**nodes):
    return {n: Numbered(ls, _smi(ls)) for n, ls in nodes.items()}


def test_the_link_rows_are_declared_per_gpu_across_the_rack_and_named_per_card():
    checks = declared()
    assert checks["FAB-ACCEL-ID"].per == checks["FAB-TRAINING"].per == "rack-gpu"
    assert checks["FAB-ERRORS"].per == "node"
    c = checks["FAB-TRAINING"]
    assert item_id(c, "node2", 3) == "FAB-TRAINING::node2-card3"
    fault = NS(name="partial-training", row="FAB-TRAINING", target="gpu", default="node2:3")
    assert derived_case(fault, c)["fail"] == ["FAB-TRAINING::node2-card3"]
    assert derived_case(NS(name="x", row="FAB-TRAINING", target="node", default="node2"), c) is None


def test_an_accel_id_on_another_node_fails_this_gpu_naming_it():
    every = _numbered(node1=_links("node1"), node2=_links("node2", ids=[4, 5, 6, 0]))  # node2/gpu3 says 0
    assert judge.accel_item(Across("node1", every, {}, 1), RACK4, "node1/gpu1") == []
    found = judge.accel_item(Across("node1", every, {}, 0), RACK4, "node1/gpu0")
    assert found == ["accel_id 0 is also reported by node2/gpu3 (card3, 0000:03:00.0) (must be unique)"]
    found = judge.accel_item(Across("node2", every, {}, 3), RACK4, "node2/gpu3")
    assert any("expected 7" in f for f in found) and any("node1/gpu0" in f for f in found)


def test_amd_smi_unreadable_is_could_not_observe_unless_the_driver_shows_the_fault():
    unread = CouldNotObserve("node1: amd-smi not found")
    good, bad = _links("node1"), _links("node1", ids=[0, 1, 2, 9])
    seen = Across("node1", {"node1": Numbered(good, [], unread)}, {}, 3)
    with pytest.raises(CouldNotObserve, match="amd-smi not found"):
        judge.accel_item(seen, RACK4, "node1/gpu3")
    assert "not read: node1: amd-smi not found" in judge.accel_shown(seen, RACK4)[0].text
    found = judge.accel_item(Across("node1", {"node1": Numbered(bad, [], unread)}, {}, 3), RACK4, "node1/gpu3")
    assert found and "expected 3" in found[0]


class _Baseline:
    def __init__(self, values):
        self.values = values

    def get(self, name, where=""):
        v = self.values.get((name, where))
        return None if v is None else NS(value=v)

    def describe(self):
        return "racks/sim-baseline.json (recorded healthy)"


def _trained(links, baseline=None, recording=False):
    return Across("node2", {"node2": Trained(links, Recorded(baseline, recording))}, {}, 3)


def test_training_is_judged_against_the_peers_then_the_baseline_and_says_when_it_has_none():
    links = _links("node2")
    with pytest.raises(CouldNotObserve, match="no baseline recorded: run `pytest -m fabric --record-baseline`"):
        judge.training_item(_trained(links), RACK4, "node2/gpu3")
    assert judge.training_item(_trained(links, recording=True), RACK4, "node2/gpu3") == []
    same = _Baseline({("ualink.local_accels", "node2/card3"): "1,2,3", ("ualink.station_lane_en_bitmap", "node2/card3"): "0xff"})
    assert judge.training_item(_trained(links, same), RACK4, "node2/gpu3") == []
    moved = _Baseline({("ualink.local_accels", "node2/card3"): "1,2", ("ualink.station_lane_en_bitmap", "node2/card3"): "0xff"})
    assert judge.training_item(_trained(links, moved), RACK4, "node2/gpu3") == [
        "local_accels=1,2,3 but the healthy baseline has 1,2 (racks/sim-baseline.json (recorded healthy))"]
    with pytest.raises(CouldNotObserve, match="has no ualink.local_accels, ualink.station_lane_en_bitmap for this GPU"):
        judge.training_item(_trained(links, _Baseline({})), RACK4, "node2/gpu3")


def test_a_card_trained_otherwise_than_its_peers_fails_and_never_becomes_a_baseline():
    links = _links("node2")
    links[3] = Link(**{**links[3].__dict__, "station_lane_en_bitmap": "0x0f"})
    seen = _trained(links, recording=True)
    assert "differs from its peers" in judge.training_item(seen, RACK4, "node2/gpu3")[0]
    assert judge.training_facts(seen, "node2/card3") == []
    ok = Across("node2", seen.facts, {}, 1)
    assert {f.name: f.value for f in judge.training_facts(ok, "node2/card1")} == {
        "ualink.local_accels": "1,2,3", "ualink.station_lane_en_bitmap": "0xff"}


def test_the_survey_judges_accel_ids_again_across_every_tray_it_read():
    """registry.across_trays: a tray judged alone passes; across the trays read, the accel_id it
    shares with another tray fails the GPU on both (as the items judge across the rack)."""
    c = declared()["FAB-ACCEL-ID"]
    every = _numbered(node1=_links("node1"), node2=_links("node2", ids=[4, 5, 6, 0]))
    ons = [On(RACK4, None, "node1", g, Card(g, f"0000:0{g}:00.0", "amdgpu")) for g in range(4)]
    alone = [Place(on.where, on.gpu, judge_at(c, RACK4, on.key, on.where,
                                               lambda on=on: Across("node1", {"node1": every["node1"]}, {}, on.gpu), on))
             for on in ons]
    assert all(p.judged is not None and p.judged.findings == [] for p in alone)
    again = across_trays(c, alone, every, RACK4)
    assert [bool(p.judged.findings) for p in again] == [True, False, False, False]
    assert "node2/gpu3" in again[0].judged.findings[0]
