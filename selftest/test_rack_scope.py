"""The "rack" scope of a declaration (rackgate/gates/declare.py): each node's item judged across
the nodes that answered -- PLAT-ATOM-COMMIT's majority, FAB-POD's one fabric domain. The judges
are pure: they blame the node they judge, never the rack, and refuse to judge what was not read."""
import pytest

from rackgate import simrack
from rackgate.errors import CouldNotObserve, UnrecognisedOutput
from rackgate.gates import fabric, plat
from rackgate.gates.declare import Across
from rackgate.probes.ualink import Link, Settled
from rackgate.registry import checks as declared

pytestmark = pytest.mark.unit
A, B = "a" * 40, "b" * 40


@pytest.fixture(scope="module")
def rack():
    from rackgate import config
    return config.load(simrack.shipped_rack())


def _commits(node, **by_node):
    return Across(node, {n: (c, f"{n}: {c}") for n, c in by_node.items()}, {})


def test_a_node_alone_with_its_commit_fails_and_only_it(rack):
    got = dict(node1=A, node2=A, node3=A, node4=B)
    assert plat.commit_agrees(_commits("node1", **got), rack, "node1") == []
    (finding,) = plat.commit_agrees(_commits("node4", **got), rack, "node4")
    assert B in finding and f"{A} on node1, node2, node3" in finding


def test_a_tie_has_no_majority_so_every_node_of_it_fails(rack):
    got = dict(node1=A, node2=A, node3=B, node4=B)
    assert all(plat.commit_agrees(_commits(n, **got), rack, n) for n in got)


def test_a_node_that_could_not_be_read_is_its_own_could_not_observe(rack):
    got = Across("node2", {"node1": (A, "")}, {"node2": CouldNotObserve("node2: git not found")})
    with pytest.raises(CouldNotObserve, match="git not found"):
        plat.commit_shown(got, rack)
    assert plat.commit_agrees(Across("node1", got.facts, got.unseen), rack, "node1") == []


def _links(node, vpods, state="active"):
    return Settled([Link(card=g + 1, accel_state=state, accel_id=g, accel_id_raw=str(g), link_type="x",
                         ppod_id="0x1", vpod_id=v, local_accels="1", station_lane_en_bitmap="f", gpu=g)
                    for g, v in enumerate(vpods)], 0.0)


def test_the_pod_judge_fails_the_node_outside_the_racks_domain(rack):
    facts = {"node1": _links("node1", "00"), "node2": _links("node2", "00"), "node3": _links("node3", "33")}
    assert fabric.pod_agrees(Across("node1", facts, {}), rack, "node1") == []
    (finding,) = fabric.pod_agrees(Across("node3", facts, {}), rack, "node3")
    assert "node3/gpu0" in finding and "node3/gpu1" in finding and "vpod=0" in finding.split("rest of the rack")[1]


def test_a_node_with_no_trained_link_is_not_compared(rack):
    facts = {"node1": _links("node1", "00"), "node2": _links("node2", "00", state="unconfigured")}
    with pytest.raises(UnrecognisedOutput, match="node2"):
        fabric.pod_agrees(Across("node2", facts, {}), rack, "node2")


def test_rack_checks_are_declared_and_their_fault_derives_a_per_node_case():
    checks = declared()
    assert {checks["PLAT-ATOM-COMMIT"].per, checks["FAB-POD"].per} == {"rack"}
    from rackgate.registry import item_id
    assert item_id(checks["FAB-POD"], "node4") == "FAB-POD::node4"
