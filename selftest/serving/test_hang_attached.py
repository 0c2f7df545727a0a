"""Issue 34, attached as a new user would (--atom-url, no rack file: the DP ranks are not known and
the server spreads the requests): a rank that accepts requests and never answers is SRV-DEADLOCK's
FAILED within the hang bound, with the share, exit 1 and the row in verdict.json -- never "could
not observe" at the request timeout; a rank whose chat answers are all reasoning is ACC-BUDGET's
FAILED with the share, though one of its requests alone may land on a healthy rank."""
import pytest

from ..harness import run_suite
from ..simserver import sim_server

pytestmark = pytest.mark.suite

SANITY = "SRV-SANITY::server"
CONSISTENCY = "SRV-CONSISTENCY::server"
BUDGET = "ACC-BUDGET::server"
MODEL = "moonshotai/Kimi-K3"


def _finding_rows(run) -> set[str]:
    return {i["row"] for i in run.verdict["items"] if i["outcome"] == "FAIL"}


def test_a_hung_rank_is_a_failed_deadlock_not_an_unknown(tmp_path):
    with sim_server("rank-hung") as (proc, url):
        run = run_suite(tmp_path, "-m", "gate", SANITY, CONSISTENCY, "--atom-url", url,
                        "--served-model", MODEL)
        assert proc.poll() is None, "the suite stopped a server it did not start"
    assert run.ids("failed") == {SANITY}, run.stdout[-3000:]
    msg = run.outcomes[SANITY].message
    assert msg.startswith("SRV-DEADLOCK ["), msg
    assert "SRV-SANITY's requests: " in msg and "of 16 requests still in flight after" in msg, msg
    assert "which rank holds them is not known" in msg, msg
    # the checks after it are not run, naming the hang
    assert "not run: SRV-DEADLOCK failed" in run.outcomes[CONSISTENCY].message, run.outcomes[CONSISTENCY].message
    assert run.rc == 1 and run.verdict["exit_code"] == 1, (run.rc, run.stderr[-2000:])
    assert "SRV-DEADLOCK" in _finding_rows(run), run.verdict["items"]


def test_a_reasoning_only_rank_fails_the_budget_naming_the_share(tmp_path):
    with sim_server("rank-reasoning-length") as (_proc, url):
        run = run_suite(tmp_path, BUDGET, "--atom-url", url, "--served-model", MODEL)
    assert run.ids("failed") == {BUDGET}, run.stdout[-3000:]
    msg = run.outcomes[BUDGET].message
    assert msg.startswith("ACC-BUDGET [") and "of 16 answers without an answer in content" in msg, msg
    assert "finish_reason='length'" in msg and "the other " in msg, msg
    assert run.rc == 1 and _finding_rows(run) == {"ACC-BUDGET"}, (run.rc, run.verdict)
