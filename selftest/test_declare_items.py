"""A per-GPU declaration's items in a suite run (the declarations alone: test_declare.py)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.suite


PER_GPU_PLANT = '''
from rackgate import registry
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
    registry.checks()
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
    run = run_suite(tmp_path, "-p", "rg_per_gpu", "PLAT-SHM", "-p", "no:xdist",
                    env=env)
    items = {f"PLAT-SHM::node{n}-card{g}" for n in range(1, 5) for g in range(4)}
    one = "PLAT-SHM::node2-card3"
    assert run.ids("passed") == items - {one} and run.ids("failed") == {one}, run.stdout[-3000:] + run.stderr[-2000:]
    assert "PLAT-SHM [node2/gpu3 (card3, " in run.outcomes[one].message, run.outcomes[one].message
