"""SRV-HW-ERRORS: no GPU took hardware errors while the server booted, served, was measured
(rackgate/fixtures/bracket.py snapshots the counters at every stage boundary)."""
import pytest

from rackgate.fixtures.bracket import judge_stages


@pytest.mark.row("SRV-HW-ERRORS")
def test_srv_hw_errors(node, rack, bracket, evidence, facts):
    judge_stages("SRV-HW-ERRORS", node.name, rack, bracket, evidence, facts)
