"""Attach mode: --atom-url/--served-model never launches or stops anything, and the gate judges
the server it is pointed at."""
from rackgate.catalogue import row

from .harness import run_suite
from .simserver import sim_server

SANITY = "tests/serving/test_server.py::test_sanity"


def test_gate_against_a_bang_server_fails_sanity(tmp_path):
    with sim_server("bang-tokens") as (proc, url):
        run = run_suite(tmp_path, "-m", "gate", "--atom-url", url, "--served-model", "moonshotai/Kimi-K3")
        assert proc.poll() is None, "the suite stopped a server it did not start"
    # the quick GSM8K gate (accuracy) scores a '!' server at 0 too: that is its own verdict
    assert SANITY in run.ids("failed"), run.stdout[-3000:]
    assert run.ids("failed") <= {SANITY, "tests/accuracy/test_gsm8k_quick.py::test_gsm8k_quick"}, run.stdout[-3000:]
    msg = run.outcomes[SANITY].message
    r = row("SRV-SANITY")
    assert r.meaning in msg and r.action in msg and "every character is '!'" in msg


def test_gate_against_a_healthy_server_passes(tmp_path):
    with sim_server() as (proc, url):
        run = run_suite(tmp_path, "-m", "gate", "--atom-url", url, "--served-model", "moonshotai/Kimi-K3")
        assert proc.poll() is None
    assert run.outcomes and run.ids("failed") | run.ids("error") == set(), run.stdout[-3000:]
    # what an attached run cannot see (the boot it did not watch, logs it does not have) is
    # skipped with the reason, never failed
    for tid in run.ids("skipped"):
        msg = run.outcomes[tid].message
        assert "attached" in msg or "--atom-url" in msg, (tid, msg)


def test_wrong_served_model_is_said_plainly(tmp_path):
    with sim_server() as (proc, url):
        run = run_suite(tmp_path, "-m", "gate", "--atom-url", url, "--served-model", "/models/Kimi-K3")
    models = "tests/serving/test_server.py::test_models_lists_served_name"
    assert run.outcomes[models].status == "failed"
    assert "not the configured served name '/models/Kimi-K3'" in run.outcomes[models].message
