"""Issue 34 in the accuracy checks: against the sim with one rank that accepts requests and never
answers (rank-hung), ACC-QUICK and ACC-GSM8K (lm-eval, a subprocess the suite does not drive
request by request) each ask every rank first through the per-rank mechanism, and end as
SRV-DEADLOCK's FAILED naming the rank -- never could-not-observe at the request timeout; exit 1."""
import pytest

from ..harness import run_suite

pytestmark = [pytest.mark.suite, pytest.mark.timeout(600)]

CHECKS = {"ACC-QUICK": "ACC-QUICK::server",
          "ACC-GSM8K": "ACC-GSM8K::server"}


@pytest.mark.parametrize("row", sorted(CHECKS))
def test_a_hung_rank_fails_the_accuracy_check_as_a_deadlock(row, tmp_path):
    item = CHECKS[row]
    run = run_suite(tmp_path, item, "--sim-fault", "rank-hung")
    assert run.ids("failed") == {item}, run.stdout[-3000:]
    msg = run.outcomes[item].message
    assert msg.startswith("SRV-DEADLOCK [node3/dp9]"), msg[:1500]
    assert f"{row}'s requests: 1 of " in msg and "requests still in flight after" in msg, msg[:1500]
    assert "no answer within" not in msg, msg[:1500]
    assert run.rc == 1, (run.rc, run.stderr[-2000:])
