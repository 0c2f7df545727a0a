"""A REG matrix case's `moved` facts: judged on the run's old -> new table by verdict and
direction, never by the figures (a measured figure moves with load and sampling)."""
import pytest

from rackgate.baseline.compare import Move, table
from rackgate.catalogue import matrix

from .matrix import moved_problems, regressed_rows

pytestmark = pytest.mark.unit


def _table(old, new, ok=False, name="accuracy.gsm8k.full", where="", unit=""):
    others = [Move("serving.kv.blocks", "node1/dp0", "", 100, 100, "must be equal", True)]
    return "rackgate regression: baseline\n" + table([Move(name, where, unit, old, new, "may drop ±0.01", ok), *others])


def test_a_drop_beyond_the_band_is_seen_whatever_the_figures():
    for old, new in ((0.98, 0.96), (0.98, 0.94), (0.5, 0.1)):
        assert moved_problems([{"fact": "accuracy.gsm8k.full", "direction": "down"}], _table(old, new)) == []


def test_the_wrong_direction_or_no_verdict_is_a_problem():
    down = [{"fact": "accuracy.gsm8k.full", "direction": "down"}]
    assert moved_problems(down, _table(0.94, 0.98)) == ["accuracy.gsm8k.full (-): 0.94 -> 0.98 did not move down"]
    assert moved_problems(down, _table(0.98, 0.975, ok=True)) == [
        "no REGRESSED row for accuracy.gsm8k.full in the run's old -> new table"]  # within the band: ok, not moved
    assert moved_problems([{"fact": "bench.tpot_ms", "direction": "up"}], _table(0.98, 0.96))


def test_units_and_text_facts():
    rows = regressed_rows(_table(159.4, 147.4, name="serving.kv.available_gb", where="node1/dp0", unit="GB"))
    assert rows == [("serving.kv.available_gb", "node1/dp0", "159.4", "147.4 GB")]
    up = [{"fact": "serving.kv.available_gb", "direction": "up", "where": "node1/dp0"}]
    assert moved_problems(up, _table(159.4, 147.4, name="serving.kv.available_gb", where="node1/dp0", unit="GB"))
    changed = [{"fact": "platform.atom.commit", "direction": "changed"}]
    assert moved_problems(changed, _table("3f2a9c1", "77be0d4", name="platform.atom.commit")) == []


def test_no_case_asserts_a_measured_figure():
    """REG cases show a moved fact as `moved`; their `output` holds no 'old -> new' figures of
    measured facts (a figure the sim configures, like a KV budget it prints, may stay)."""
    measured = ("accuracy.", "bench.", "fabric.", "serving.cold_start_s")
    for case in matrix():
        if case["source"] != "reg.toml":
            continue
        assert case.get("moved"), case["fault"]
        if any(m["fact"].startswith(measured) for m in case["moved"]):
            assert not [o for o in case.get("output", []) if " -> " in o], (case["fault"], case["output"])
