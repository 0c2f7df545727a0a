"""Checks declared once (rackgate/gates/declare.py): what a declaration may name, the matrix case
derived from one, and the node files a sim fault declares (rackgate/sim/areas/files.py)."""
from __future__ import annotations

import pytest

from rackgate.catalogue import row
from rackgate.faultmatrix import derived_case
from rackgate.gates.declare import Check, DeclarationError, Shown, declare, declared
from rackgate.sim import faults as sim_faults
from rackgate.sim import state as sim_state
from rackgate.sim.areas import files as sim_files
from rackgate.sim.faults import Fault, FaultError, NodeFile
from rackgate.sim.render import node_root

pytestmark = pytest.mark.suite


def test_every_declaration_names_a_probe_and_a_judge_where_the_floor_plan_puts_them():
    checks = declared()
    assert checks, "no declared check"
    for rid, c in checks.items():
        assert row(rid).id == rid == c.row
        for fn, pkg in ((c.probe, "rackgate.probes."), (c.judge, "rackgate.gates.")):
            assert fn.__module__.startswith(pkg) and fn.__name__ != "<lambda>", (rid, fn)
        assert c.per in ("node", "gpu")


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
                    "paths": ["rackgate/checks/test_declared.py::test_plat_shm"],
                    "fail": ["rackgate/checks/test_declared.py::test_plat_shm[node3]"], "source": "derived"}
    assert derived_case(gpu_fault, _check("node"))["fail"] == ["rackgate/checks/test_declared.py::test_plat_shm[node2]"]
    assert derived_case(gpu_fault, _check("gpu"))["fail"] == ["rackgate/checks/test_declared.py::test_plat_shm[node2-card1]"]
    # which GPUs a node-wide fault fails, or what a rack-wide one does, is an explicit case
    assert derived_case(node_fault, _check("gpu")) is None
    assert derived_case(Fault("r", "PLAT-SHM", "h"), _check("node")) is None


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


PER_GPU_PLANT = '''
from rackgate.gates import declare as d
from rackgate.gates import plat


def vendor(on):
    return on.host.read(f"/sys/class/drm/card{on.card.card}/device/vendor")


def is_amd(text, rack, where):
    if where.startswith("node2/gpu3 "):
        return [f"planted finding on {where}"]
    return [] if text == "0x1002\\n" else [f"{where}: vendor {text!r}"]


def shown(text, rack):
    return [d.Shown("vendor", text)]


def pytest_configure(config):
    d.declared()
    vendor.__module__ = "rackgate.probes.planted"
    d._CHECKS["PLAT-SHM"] = d.Check("PLAT-SHM", "gpu", probe=vendor, judge=is_amd, shows=shown)
'''


def test_a_per_gpu_declaration_makes_one_item_per_gpu_named_by_node_and_card(tmp_path):
    """No row is declared per GPU yet (the FAB checks are written as tests): a planted one proves
    the path — items test_<row>[node2-card3], the GPU's card in the probe, its `where` in findings."""
    import os

    from .harness import run_suite
    (tmp_path / "rg_per_gpu.py").write_text(PER_GPU_PLANT)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    run = run_suite(tmp_path, "-p", "rg_per_gpu", "rackgate/checks/test_declared.py::test_plat_shm", "-p", "no:xdist",
                    env=env)
    items = {f"rackgate/checks/test_declared.py::test_plat_shm[node{n}-card{g}]" for n in range(1, 5) for g in range(4)}
    one = "rackgate/checks/test_declared.py::test_plat_shm[node2-card3]"
    assert run.ids("passed") == items - {one} and run.ids("failed") == {one}, run.stdout[-3000:] + run.stderr[-2000:]
    assert "PLAT-SHM [node2/gpu3 (card3, " in run.outcomes[one].message, run.outcomes[one].message
