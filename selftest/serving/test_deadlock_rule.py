"""SRV-DEADLOCK decides on log evidence (`_sync_dp_state failed` and the rank that did not log it),
never on latency: a server too slow for the load window is could-not-observe, not a deadlock; the
deadlocked sim is FAILED naming the silent rank and quoting its last KV-usage line."""
import re

import pytest

from ..harness import REPO, run_suite

pytestmark = pytest.mark.suite

CHECK = "rackgate/checks/serving/test_under_load.py::test_no_dp_sync_deadlock"


def _one(run):
    got = {k: o for k, o in run.outcomes.items() if k == CHECK}
    assert len(got) == 1, run.stdout[-3000:]
    return got[CHECK]


def test_a_slow_answer_is_not_a_deadlock(tmp_path):
    base = (REPO / "rackgate" / "sim" / "racks" / "sim.toml").read_text()
    rack = tmp_path / "slow.toml"
    # A window no request can meet: the healthy sim is merely "slow" here; no rank logs a timeout.
    rack.write_text(re.sub(r"(?m)^deadlock_window_s = .*$", "deadlock_window_s = 0.01", base))
    run = run_suite(tmp_path, "--rack", str(rack), "-k", "test_no_dp_sync_deadlock", timeout=400)
    o = _one(run)
    assert o.status == "error", (o.status, o.message)
    assert "not a deadlock by the log" in o.message and "serving.deadlock_window_s" in o.message


def test_the_deadlock_names_the_silent_rank_and_its_kv_usage(tmp_path):
    run = run_suite(tmp_path, "--sim-fault", "dp-deadlock", "-k", "test_no_dp_sync_deadlock", timeout=400)
    o = _one(run)
    assert o.status == "failed", (o.status, o.message)
    m = re.search(r"(\d+) of (\d+) ranks logged `_sync_dp_state failed`.*the rank\(s\) that did not: (\S+)/dp(\d+)",
                  o.message)
    assert m and int(m.group(1)) == int(m.group(2)) - 1, o.message
    assert f"Engine {int(m.group(4)):03d}: prompt throughput: 0.0 tok/s" in o.message and "KV usage: 98.6%" in o.message
