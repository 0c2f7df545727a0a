"""Output length on the quick gate's questions (MLPerf TEST09) as regression facts, and the
picture of both distributions."""
import pytest

from rackgate.config.regression import RegressionExpect
from rackgate.gsm8k import lengths
from rackgate.gsm8k.scoring import ItemVerdict

pytestmark = pytest.mark.unit


def _items(counts):
    return [ItemVerdict(i, "x", "stop", "1", tokens=n) for i, n in enumerate(counts)]


def test_mean_spread_and_counts_recorded():
    got = lengths.facts(_items([100, 120, 140, None]))
    assert got["accuracy.output_tokens.mean"] == 120
    assert got["accuracy.output_tokens.stdev"] == pytest.approx(16.33, abs=0.01)
    assert lengths.counts_of(got["accuracy.output_tokens.per_question"]) == [100, 120, 140]
    assert lengths.facts(_items([None, 0])) == {}  # no count read: nothing recorded, never a 0 mean


def test_tolerances_judge_mean_and_spread_and_only_report_counts():
    facts = RegressionExpect().facts
    assert facts["accuracy.output_tokens.mean"].direction == "both"
    assert facts["accuracy.output_tokens.per_question"].direction == "report"
    assert lengths.distribution_of("accuracy.output_tokens.mean") == "accuracy.output_tokens.per_question"
    assert lengths.distribution_of("accuracy.gsm8k.quick") is None


