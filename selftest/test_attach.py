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
    assert run.ids("failed") == {SANITY}, run.stdout[-3000:]
    msg = run.outcomes[SANITY].message
    r = row("SRV-SANITY")
    assert r.meaning in msg and r.action in msg and "every character is '!'" in msg


def test_gate_against_a_healthy_server_passes(tmp_path):
    with sim_server() as (proc, url):
        run = run_suite(tmp_path, "-m", "gate", "--atom-url", url, "--served-model", "moonshotai/Kimi-K3")
        assert proc.poll() is None
    assert run.outcomes and run.not_passed == set(), run.stdout[-3000:]


def test_wrong_served_model_is_said_plainly(tmp_path):
    with sim_server() as (proc, url):
        run = run_suite(tmp_path, "-m", "gate", "--atom-url", url, "--served-model", "/models/Kimi-K3")
    models = "tests/serving/test_server.py::test_models_lists_served_name"
    assert run.outcomes[models].status == "failed"
    assert "not the configured served name '/models/Kimi-K3'" in run.outcomes[models].message
