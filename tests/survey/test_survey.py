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


@pytest.mark.row("PLAT-FREE")
def test_free(tray, survey, evidence):
    c = _cell(survey, tray, "free", evidence)
    check(c.status != FAIL, "PLAT-FREE", tray.name, c.seen)


@pytest.mark.row("PLAT-TUNED")
def test_tuned(tray, survey, evidence):
    c = _cell(survey, tray, "tuned", evidence)
    check(c.status != FAIL, "PLAT-TUNED", tray.name, c.seen)


@pytest.mark.row("PLAT-PARAMS")
def test_params(tray, survey, evidence):
    c = _cell(survey, tray, "params", evidence)
    check(c.status != FAIL, "PLAT-PARAMS", tray.name, c.seen)


@pytest.mark.row("FAB-STATE")
def test_links(tray, survey, evidence):
    c = _cell(survey, tray, "links", evidence)
    check(c.status != FAIL, "FAB-STATE", tray.name, c.seen)


@pytest.mark.row("FAB-ACCEL-ID")
def test_accel_id(tray, survey, evidence):
    c = _cell(survey, tray, "accel", evidence)
    check(c.status != FAIL, "FAB-ACCEL-ID", tray.name, c.seen)


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
