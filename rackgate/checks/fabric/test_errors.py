"""FAB-ERRORS: no GPU took hardware errors while the fabric stages ran (rackgate/fixtures/bracket.py
snapshots the counters at the stages' start and end)."""
import pytest

from rackgate.fixtures.bracket import judge_stages


@pytest.mark.row("FAB-ERRORS")
def test_fab_errors(node, rack, bracket, evidence, facts):
    judge_stages("FAB-ERRORS", node.name, rack, bracket, evidence, facts)
