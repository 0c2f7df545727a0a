"""ACC-UNDER-LOAD reads ACC-QUICK's accuracy, not its verdict (catalogue `reads`): a model below
the quick gate's threshold still has an accuracy to agree with, while degenerate answers have none
(SRV-SANITY's finding, named)."""
import pytest

from ..harness import run_suite

pytestmark = pytest.mark.suite

QUICK = "ACC-QUICK::server"
UNDER_LOAD = "ACC-UNDER-LOAD::server"


def test_a_failed_quick_gate_still_gets_its_accuracy_compared_under_load(tmp_path):
    """accuracy-drop: 80% right at any load. The quick gate FAILS; under load the accuracy is the
    same 80%, so ACC-UNDER-LOAD PASSES (it was "not run: ACC-QUICK failed" before `reads`)."""
    run = run_suite(tmp_path, "--sim-fault", "accuracy-drop", QUICK, UNDER_LOAD, timeout=900)
    assert run.outcomes[QUICK].status == "failed", run.stdout[-3000:]
    assert run.outcomes[UNDER_LOAD].status == "passed", run.outcomes[UNDER_LOAD].message


def test_degenerate_answers_leave_nothing_to_compare(tmp_path):
    """bang-tokens: the quick gate names SRV-SANITY; ACC-UNDER-LOAD is not run, pointing at it."""
    run = run_suite(tmp_path, "--sim-fault", "bang-tokens", QUICK, UNDER_LOAD, timeout=900)
    assert run.outcomes[QUICK].status == "failed" and "SRV-SANITY" in run.outcomes[QUICK].message
    o = run.outcomes[UNDER_LOAD]
    assert o.status == "error" and "not run: ACC-QUICK found degenerate answers (SRV-SANITY)" in o.message, o.message


def test_under_load_alone_reads_the_quick_gates_run_itself(tmp_path):
    """ACC-UNDER-LOAD selected without ACC-QUICK: the quick gate's run is the session's read
    (rackgate/fixtures/quick_gate.py), made by the first check that asks, so there is an accuracy
    to compare with (it was could-not-observe, "ACC-QUICK measured no accuracy", while ACC-QUICK
    handed its accuracy on through a fixture it wrote into)."""
    run = run_suite(tmp_path, UNDER_LOAD, timeout=900)
    o = run.outcomes[UNDER_LOAD]
    assert o.status == "passed", o.message or run.stdout[-3000:]
    assert QUICK not in run.outcomes
