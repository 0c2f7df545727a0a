"""`pytest -m survey`: every tray of the rack file, read-only, surveyed at once; each check of
each tray is its own item (the same cells as `rackgate survey`). could-not-observe is an ERROR."""
import pytest

from rackgate.errors import CouldNotObserve, NotRun
from rackgate.report import rackmap
from rackgate.report.verdict import check
from rackgate.survey import table
from rackgate.survey.model import FAIL, TITLE, UNOBSERVED

pytestmark = pytest.mark.survey


def _cell(survey, node, key, evidence):
    r = survey[node.name]
    reach = r.cells["reach"]
    if reach.status == UNOBSERVED:
        if key == "reach":
            raise CouldNotObserve(reach.seen)
        raise NotRun(f"{node.name}: not surveyed: {reach.seen}")
    c = r.cells.get(key)
    if c is None:
        raise NotRun(f"{node.name}: no {TITLE[key]} result")
    evidence.attach(f"survey: {TITLE[key]}", f"{c.status}: {c.seen}")
    if c.status == UNOBSERVED:
        raise CouldNotObserve(c.seen)
    return c


def test_reachable(tray, survey, evidence):
    _cell(survey, tray, "reach", evidence)


# Each tray's own checks: (survey cell, catalogue row); each carries its row's marker.
CHECKS = [pytest.param(cell, row, marks=pytest.mark.row(row), id=cell) for cell, row in (
    ("gpus", "PLAT-GPUS"), ("free", "PLAT-FREE"), ("tuned", "PLAT-TUNED"), ("params", "PLAT-PARAMS"), ("ras", "PLAT-RAS"),
    ("links", "FAB-STATE"),
    ("accel", "FAB-ACCEL-ID"))]


@pytest.mark.parametrize(("cell", "row"), CHECKS)
def test_tray(tray, survey, evidence, cell, row):
    c = _cell(survey, tray, cell, evidence)
    check(c.status != FAIL, row, tray.name, c.seen)


@pytest.mark.row("FAB-POD")
def test_node_set(survey, proposal, pick_n, rack, evidence):
    """A set of pick_n trays in one fabric domain (same PPOD_ID and VPOD_ID), every one usable."""
    reports = list(survey.values())
    text = table.table(reports) + "\n\n" + table.proposal(proposal, reports)
    evidence.attach("survey", text)
    print("\n" + text)
    evidence.plot("rack map: the survey (trays x GPUs)",
                  rackmap.png_survey(reports, proposal, rack.gpus_per_node, title=f"survey of {rack.name}"))
    check(proposal.chosen is not None, "FAB-POD", "rack", table.proposal(proposal, reports).replace("\n", " | "))
