"""Checks declared once (rackgate/gates/declare.py): what a declaration may name, the matrix case
derived from one, and the node files a sim fault declares (rackgate/sim/areas/files.py)."""
from __future__ import annotations

import pytest

from rackgate.catalogue import row
from rackgate.faultmatrix import derived_case
from rackgate.gates.declare import PER, Check, DeclarationError, Shown, declare
from rackgate.registry import checks as declared
from rackgate.sim import faults as sim_faults
from rackgate.sim import state as sim_state
from rackgate.sim.areas import files as sim_files
from rackgate.sim.faults import Fault, FaultError, NodeFile
from rackgate.sim.render import node_root

pytestmark = pytest.mark.unit


def test_every_declaration_names_a_probe_and_a_judge_where_the_floor_plan_puts_them():
    checks = declared()
    assert checks, "no declared check"
    for rid, c in checks.items():
        assert row(rid).id == rid == c.row
        for fn, pkg in ((c.probe, "rackgate.probes."), (c.judge, "rackgate.gates.")):
            assert fn.__module__.startswith(pkg) and fn.__name__ != "<lambda>", (rid, fn)
        assert c.per in PER


def test_a_row_is_declared_once():
    c = next(iter(declared().values()))
    with pytest.raises(DeclarationError, match="declared twice"):
        declare(c)


def _check(per: str) -> Check[int]:
    def judge(v: int, rack: object, where: str) -> list[str]:
        return []

    def shows(v: int, rack: object) -> list[Shown]:
        return []

    return Check("PLAT-SHM", per, probe=int, judge=judge, shows=shows)  # type: ignore[arg-type]


def test_the_derived_case_names_the_declared_item_at_the_fault_s_default_place():
    node_fault = Fault("f", "PLAT-SHM", "h", target="node", default="node3")
    gpu_fault = Fault("g", "PLAT-SHM", "h", target="gpu", default="node2:1")
    case = derived_case(node_fault, _check("node"))
    assert case == {"fault": "f", "row": "PLAT-SHM", "select": "platform",
                    "paths": ["PLAT-SHM"],
                    "fail": ["PLAT-SHM::node3"], "source": "derived"}
    assert derived_case(gpu_fault, _check("node"))["fail"] == ["PLAT-SHM::node2"]
    assert derived_case(gpu_fault, _check("gpu"))["fail"] == ["PLAT-SHM::node2-card1"]
    # which GPUs a node-wide fault fails, or what a rack-wide one does, is an explicit case
    assert derived_case(node_fault, _check("gpu")) is None
    assert derived_case(Fault("r", "PLAT-SHM", "h"), _check("node")) is None


def test_a_rank_fault_derives_the_items_of_the_ranks_it_picks_and_a_server_check_its_one_item():
    """The sim rack's ranks: node3 runs dp8..dp11; a pick (1, 2) is dp9, none is the whole node."""
    one = Fault("h", "PLAT-SHM", "h", target="node", default="node3", rank=sim_faults.RankFault("hung-ranks", (1, 2)))
    node = Fault("n", "PLAT-SHM", "h", target="node", default="node2", rank=sim_faults.RankFault("hung-ranks"))
    item = "PLAT-SHM"
    assert derived_case(one, _check("rank"))["fail"] == [f"{item}::node3-dp9"]
    assert derived_case(node, _check("rank"))["fail"] == [f"{item}::node2-dp{r}" for r in (4, 5, 6, 7)]
    # a fault that picks no rank names no rank item; a server check has one item, whatever the fault
    assert derived_case(Fault("f", "PLAT-SHM", "h", target="node", default="node3"), _check("rank")) is None
    assert derived_case(Fault("r", "PLAT-SHM", "h"), _check("server"))["fail"] == [f"{item}::server"]


def test_a_fault_s_node_file_is_healthy_everywhere_and_faulted_on_its_target(tmp_path, monkeypatch):
    f = Fault("numa-on", "PLAT-SHM", "h", target="node", default="node2",
              files=(NodeFile("/proc/sys/kernel/numa_balancing", healthy="0\n", faulted="1\n"),))
    monkeypatch.setitem(sim_faults.FAULTS, f.name, f)
    st = sim_state.healthy(3, 2, 0.96)
    assert {n: s.files.get("/proc/sys/kernel/numa_balancing") for n, s in st.nodes.items()} == {
        "node1": "0\n", "node2": "0\n", "node3": "0\n"}
    sim_faults.apply(st, "numa-on")
    for name, node in st.nodes.items():
        sim_files.render(tmp_path, name, node)
    got = {n: (node_root(tmp_path, n) / "proc/sys/kernel/numa_balancing").read_text() for n in st.nodes}
    assert got == {"node1": "0\n", "node2": "1\n", "node3": "0\n"}
    assert sim_state.Rack.from_json(st.to_json()).nodes["node2"].files == st.nodes["node2"].files


def test_a_node_file_is_a_real_absolute_path():
    for bad in ("proc/sys/kernel/x", "/proc/../etc/passwd", "/sys/class/"):
        with pytest.raises(FaultError):
            NodeFile(bad, "0\n", "1\n")




def test_a_declared_run_longer_than_the_default_timeout_gives_its_item_that_timeout():
    """Check.timeout_s: the GSM8K rows' items carry their runs' bound (7200 s, lm-eval's 14400 s);
    a declaration without one keeps the run's default."""
    from rackgate import registry
    from rackgate.checks import declared

    def timeout(row: str) -> tuple[int, ...]:
        return tuple(m.args[0] for m in declared.marks(registry.checks()[row]) if m.name == "timeout")
    assert (timeout("ACC-QUICK"), timeout("ACC-UNDER-LOAD"), timeout("ACC-GSM8K")) == ((7200,), (7200,), (14400,))
    assert timeout("ACC-BUDGET") == ()
