"""Dependencies and order as catalogue data (`order`, `needs`): the decisive checks run first, and
once one of them FAILED (or the server did not boot, or does not serve the name) the checks that
depend on it ERROR at once with "not run: <ROW> failed (see it)" -- never SKIPPED, never exit 0."""
import pytest

from rackgate.catalogue import row, rows

from .harness import run_suite
from .simserver import sim_server

pytestmark = pytest.mark.suite

SANITY = "SRV-SANITY::server"
MODELS = "SRV-MODELS::server"
BUDGET = "ACC-BUDGET::server"
CONSISTENCY = "SRV-CONSISTENCY::server"
QUICK = "ACC-QUICK::server"


def test_every_needed_row_runs_earlier():
    for r in rows().values():
        for need in r.needs:
            assert rows()[need].order < r.order, (r.id, need)


def test_sanity_failure_stops_the_costly_checks(tmp_path):
    """Also attach mode's gate against a '!' server (it was test_attach.py's own run of the same
    command): the server it did not start is left running, SRV-SANITY fails with its row's meaning
    and action and what it read, and nothing else fails (the rest: not run, below)."""
    with sim_server("bang-tokens") as (proc, url):
        run = run_suite(tmp_path, "-m", "gate", "--atom-url", url, "--served-model", "moonshotai/Kimi-K3")
        assert proc.poll() is None, "the suite stopped a server it did not start"
    assert run.rc != 0
    assert run.outcomes[SANITY].status == "failed", run.stdout[-3000:]
    assert run.ids("failed") <= {SANITY, QUICK}, run.stdout[-3000:]
    r = row("SRV-SANITY")
    msg = run.outcomes[SANITY].message
    assert r.meaning in msg and r.action in msg and "every character is '!'" in msg, msg
    # SANITY's is the first verdict that blames the server (JUnit lists items in run order)
    first = next(k for k, o in run.outcomes.items() if o.status in ("failed", "error"))
    assert first == SANITY, (first, list(run.outcomes))
    for tid in (BUDGET, CONSISTENCY, QUICK):
        o = run.outcomes[tid]
        assert o.status == "error" and "not run: SRV-SANITY failed (see it)" in o.message, (tid, o)


def test_unserved_name_stops_every_request_check(tmp_path):
    """The model's folder given where the served name belongs (the server serves moonshotai/Kimi-K3):
    SRV-MODELS says so plainly (it was test_attach.py's own run of the same command), and every check
    that sends a request is not run."""
    with sim_server() as (_proc, url):
        run = run_suite(tmp_path, "-m", "gate", "--atom-url", url, "--served-model", "/models/Kimi-K3")
    assert run.rc != 0
    assert run.outcomes[MODELS].status == "failed"
    assert "not the configured served name '/models/Kimi-K3'" in run.outcomes[MODELS].message, run.outcomes[MODELS]
    for tid in (SANITY, BUDGET, CONSISTENCY, QUICK):
        o = run.outcomes[tid]
        assert o.status == "error" and "not run: SRV-MODELS" in o.message, (tid, o)
    assert not run.ids("skipped") & {SANITY, BUDGET, CONSISTENCY, QUICK}


def test_accuracy_against_a_server_that_never_boots_exits_non_zero(tmp_path):
    run = run_suite(tmp_path, "-m", "accuracy and not slow", "--sim-fault", "kv-rack-busy", timeout=600)
    assert run.rc != 0, run.stdout[-3000:]
    assert run.outcomes and not run.ids("skipped") and not run.ids("passed") - {
        "ACC-FAKE-EPLB::server"}, run.stdout[-3000:]
    for tid in (BUDGET, QUICK):
        o = run.outcomes[tid]
        assert o.status == "error" and "not run: SRV-BOOT failed" in o.message, (tid, o)
