"""The rack map: trays x GPUs from a survey and from a suite run's verdicts, as text and PNG."""
from types import SimpleNamespace as NS

import pytest

from rackgate.report import rackmap
from rackgate.survey import pick
from rackgate.survey.model import FAIL, PASS, UNOBSERVED, Cell, TrayReport
from rackgate.verdicts import Verdict

pytestmark = pytest.mark.suite

RACK = NS(gpus_per_node=2, nodes=[NS(name="node1", tray=1), NS(name="node2", tray=2), NS(name="node3", tray=3)])


def test_run_grid_maps_gpu_node_and_pair_items():
    outcomes = {
        "FAB-STATE::node1-card1": Verdict.FAILED,
        "FAB-STATE::node1-card0": Verdict.PASSED,
        "PLAT-DRIVER::node2": Verdict.UNOBSERVED,
        "FAB-P2P::node1-node3": Verdict.PASSED,
        "FAB-POD::node2": Verdict.PASSED,   # judged across the rack, per node
        "rackgate/checks/survey/test_survey.py::test_node_set": Verdict.FAILED,   # names no node
    }
    grid = rackmap.run_grid(RACK, outcomes)
    assert grid == {("node1", 1): [rackmap.PASS, rackmap.FAIL], ("node2", 2): [rackmap.UNOBSERVED] * 2,
                    ("node3", 3): [rackmap.PASS] * 2}
    text = rackmap.terminal(grid)
    assert "node1     1  # X" in text and "node2     2  ? ?" in text


def test_survey_grid_marks_trays_outside_the_set_excluded():
    def rep(i, gpus, reach=PASS, domain=("p", "2")):
        cells = {"reach": Cell(reach, "x")}
        if reach == PASS:
            cells.update({k: Cell(PASS, "ok") for k in ("free", "tuned", "params", "links", "accel", "pod")})
        return TrayReport(f"node{i}", i, cells, domain if reach == PASS else None, gpus)
    reports = [rep(1, {0: PASS, 1: PASS}), rep(2, {0: PASS, 1: FAIL}), rep(3, {}, reach=UNOBSERVED)]
    reports[1].cells["links"] = Cell(FAIL, "card1 stuck")
    p = pick.propose(reports, 1)
    grid, notes = rackmap.survey_grid(reports, p, 2)
    assert grid[("node1", 1)] == [rackmap.PASS] * 2 and notes["node1"] == "chosen"
    assert grid[("node2", 2)] == [rackmap.EXCLUDED, rackmap.FAIL] and notes["node2"].startswith("links active")
    assert grid[("node3", 3)] == [rackmap.UNOBSERVED] * 2
    assert rackmap.png_survey(reports, p, 2)[:8] == b"\x89PNG\r\n\x1a\n"
