"""SRV-THROTTLE: no GPU throttled while the server served and was measured (the bracket,
rackgate/fixtures/bracket.py, reads amd-smi's throttle accumulators at the stages' start and end)."""
import pytest

from rackgate.fixtures.bracket import judge_throttle


@pytest.mark.row("SRV-THROTTLE")
def test_srv_throttle(node, rack, bracket, evidence):
    judge_throttle("SRV-THROTTLE", node.name, rack, bracket, evidence)
