"""SRV-DEADLOCK decides on log evidence (`_sync_dp_state failed` and the rank that did not log it),
never on latency: a server too slow for the load window is could-not-observe, not a deadlock; the
deadlocked sim FAILS the silent rank's item (declared per DP rank: SRV-DEADLOCK::node3-dp11),
quoting its last KV-usage line, and passes every other rank's."""
import re

import pytest

from ..harness import REPO, run_suite

pytestmark = pytest.mark.suite

CHECK = "SRV-DEADLOCK::"


def _items(run):
    got = {k: o for k, o in run.outcomes.items() if k.startswith(CHECK)}
    assert len(got) == 16, run.stdout[-3000:]  # one per DP rank of the sim's 4 x 4
    return got


def test_a_slow_answer_is_not_a_deadlock(tmp_path):
    base = (REPO / "rackgate" / "sim" / "racks" / "sim.toml").read_text()
    rack = tmp_path / "slow.toml"
    # A window no request can meet: the healthy sim is merely "slow" here; no rank logs a timeout.
    rack.write_text(re.sub(r"(?m)^deadlock_window_s = .*$", "deadlock_window_s = 0.01", base))
    run = run_suite(tmp_path, "--rack", str(rack), "-k", "SRV-DEADLOCK", timeout=400)
    for o in _items(run).values():
        assert o.status == "error", (o.status, o.message)
        assert "not a deadlock by the log" in o.message and "serving.deadlock_window_s" in o.message


def test_the_deadlock_names_the_silent_rank_and_its_kv_usage(tmp_path):
    run = run_suite(tmp_path, "--sim-fault", "dp-deadlock", "-k", "SRV-DEADLOCK", timeout=400)
    items = _items(run)
    assert {k for k, o in items.items() if o.status != "passed"} == {CHECK + "node3-dp11"}, \
        {k: o.status for k, o in items.items()}
    o = items[CHECK + "node3-dp11"]
    assert o.status == "failed" and o.message.lstrip().startswith("SRV-DEADLOCK [node3/dp11]"), (o.status, o.message)
    m = re.search(r"(\d+) of (\d+) ranks logged `_sync_dp_state failed`.*the rank\(s\) that did not: (\S+)/dp(\d+)",
                  o.message)
    assert m and int(m.group(1)) == int(m.group(2)) - 1 and m.group(3, 4) == ("node3", "11"), o.message
    assert f"Engine {int(m.group(4)):03d}: prompt throughput: 0.0 tok/s" in o.message and "KV usage: 98.6%" in o.message
