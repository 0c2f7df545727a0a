"""Picking from survey results (pure): only valid sets, and a reason for every tray left out."""
import pytest

from rackgate.survey import pick
from rackgate.survey.model import FAIL, PASS, UNOBSERVED, Cell, TrayReport

pytestmark = pytest.mark.unit

A = ("ppod-a", "2")
B = ("ppod-b", "2")


def tray(i, domain=A, **bad):
    cells = {k: Cell(PASS, "ok") for k in ("reach", "free", "tuned", "params", "links", "accel", "pod")}
    for k, (status, seen) in bad.items():
        cells[k] = Cell(status, seen)
    if cells["reach"].status == UNOBSERVED:
        cells = {"reach": cells["reach"]}
        domain = None
    return TrayReport(f"node{i}", i, cells, domain)


def test_only_usable_trays_of_one_domain_form_sets():
    reports = [tray(1), tray(2, free=(FAIL, "foreign containers: x")), tray(3), tray(4, B), tray(5),
               tray(6, reach=(UNOBSERVED, "node node6: unreachable over ssh (x): Connection refused")), tray(7), tray(8)]
    p = pick.propose(reports, 4, top=5)
    by = {r.node: r for r in reports}
    assert p.sets
    for s in p.sets:
        assert len(s.nodes) == 4 and all(by[n].usable and by[n].domain == s.domain for n in s.nodes)
    assert p.chosen.nodes == ("node3", "node5", "node7", "node8")   # span 5 beats 1,3,5,7 (span 6)
    assert set(p.excluded) == {r.node for r in reports} - set(p.chosen.nodes)
    assert p.excluded["node2"].startswith("free: foreign containers")
    assert p.excluded["node4"].startswith("another fabric domain: ppod=ppod-b")
    assert p.excluded["node6"].startswith("could not observe") and "Connection refused" in p.excluded["node6"]
    assert "spare" in p.excluded["node1"]


def test_the_domain_with_more_usable_trays_ranks_first():
    reports = [tray(i, B) for i in (1, 2, 3, 4)] + [tray(i) for i in (5, 6, 7, 8, 9)]
    p = pick.propose(reports, 4, top=10)
    assert p.chosen.domain == A
    assert {s.domain for s in p.sets} == {A, B}
    assert all(p.excluded[f"node{i}"].startswith("another fabric domain") for i in (1, 2, 3, 4))


def test_no_set_says_why_for_every_tray():
    reports = [tray(1), tray(2), tray(3, tuned=(FAIL, "newest report older than this boot")), tray(4, B)]
    p = pick.propose(reports, 3)
    assert p.chosen is None and p.sets == []
    assert set(p.excluded) == {"node1", "node2", "node3", "node4"}
    assert "fewer than 3" in p.excluded["node1"]
    assert p.excluded["node3"].startswith("tuned this boot")


def test_pick_below_one_is_refused():
    with pytest.raises(ValueError):
        pick.propose([tray(1)], 0)
