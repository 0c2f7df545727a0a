"""The real fault matrix's plan keeps its guards (collects the suite; the grouping rules on made-up
cases: test_matrix_grouping.py)."""
import pytest

from rackgate import faultmatrix as sim_matrix
from rackgate.catalogue import rows
from rackgate.report.inventory import collect

from . import matrix as mx

pytestmark = pytest.mark.suite


CASES = sim_matrix.cases()  # the explicit cases and those derived from declared checks


def test_the_real_matrix_plan_keeps_its_guards():
    """On the shipped matrix: every case in exactly one run, every shared run's cases pairwise
    compatible, and sharing actually happens."""
    touches = mx.fault_touches([c["fault"] for c in CASES])
    items = collect()
    groups = mx.plan(CASES, touches, rows(), items=items)
    assert sorted(mx.case_id(c) for g in groups for c in g) == sorted(mx.case_id(c) for c in CASES)
    for g in groups:
        assert len(g) <= mx.MAX_GROUP
        for i, a in enumerate(g):
            assert len(g) == 1 or not mx.alone_because(a), mx.case_id(a)
            for b in g[i + 1:]:
                assert not mx.compatible(a, b, touches, rows()), (mx.case_id(a), mx.case_id(b))
                assert not mx.needs_problem(a, b, rows(), items) and not mx.needs_problem(b, a, rows(), items)
        assert not mx.selection_problem(g, items), mx.group_name(g)
    assert len(groups) < len(CASES)
    assert all(len(g) == 1 for g in groups if any(c.get("baseline") or c.get("output") for c in g))
