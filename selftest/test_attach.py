"""Attach mode: --atom-url/--served-model never launches or stops anything, and the gate judges
the server it is pointed at. The gate against a '!' server (SRV-SANITY FAILED, the server left
running) is test_dependencies.py::test_sanity_failure_stops_the_costly_checks, and a served name
the server does not serve, said plainly, its test_unserved_name_stops_every_request_check: the
same commands, one run each for both."""
import pytest

from rackgate.sim.gsm8k import SHARED as SHARED_GSM8K
from rackgate.sim.model import write_tokenizer

from .harness import REPO, run_suite
from .simserver import sim_server

pytestmark = pytest.mark.suite

SANITY = "SRV-SANITY::server"
LINT = "SRV-LAUNCH-LINT::server"


def test_gate_against_a_healthy_server_passes(tmp_path, gsm8k_dir):
    write_tokenizer(tmp_path / "tokenizer.json")  # the served model's, as a model folder carries it
    with sim_server() as (proc, url):
        run = run_suite(tmp_path, "-m", "gate", "--atom-url", url, "--served-model", "moonshotai/Kimi-K3",
                        "--gsm8k-dir", str(gsm8k_dir), "--tokenizer", str(tmp_path / "tokenizer.json"))
        assert proc.poll() is None
    assert run.outcomes and run.ids("failed") | run.ids("error") == set(), run.stdout[-3000:]
    # what an attached run cannot see (the boot it did not watch, logs it does not have) is
    # skipped with the reason, never failed
    for tid in run.ids("skipped"):
        msg = run.outcomes[tid].message
        assert ("attached" in msg or "--atom-url" in msg or "did not launch" in msg
                or "the rack file has no" in msg), (tid, msg)


def test_attach_without_a_rack_file_is_its_own_profile(tmp_path):
    """Not the sim's configuration: no launch lint (SKIPPED, the suite did not launch this server),
    the header says which configuration, data and thresholds are in force, and without
    --gsm8k-dir the data is lm-eval's dataset, never the sim's generated questions."""
    with sim_server() as (_proc, url):
        run = run_suite(tmp_path, "-m", "gate", "-k", "lint or quick", "--atom-url", url,
                        "--served-model", "moonshotai/Kimi-K3")
    assert run.outcomes[LINT].status == "skipped", run.outcomes.get(LINT)
    assert "the suite did not launch this server" in run.outcomes[LINT].message
    assert "rackgate: attach without a rack file" in run.stdout, run.stdout[:2000]
    assert "GSM8K data: lm-eval's gsm8k dataset" in run.stdout and "thresholds: ACC-QUICK pass" in run.stdout
    assert "rackgate-sim-gsm8k" not in run.stdout + run.stderr
    # lm-eval's dataset comes from the hub (or this machine's hub cache): a pass needs the sim to
    # answer real questions, which it does from its shared copy only
    quick = run.outcomes["ACC-QUICK::server"]
    assert quick.status != "passed" or (SHARED_GSM8K / "test.jsonl").is_file(), quick


def test_lint_of_a_server_the_head_does_not_run_is_could_not_observe(tmp_path):
    """Attached with a rack file, the lint reads the serving process's command line on the head.
    A head where no process serves the port (the server runs elsewhere) is nothing read: ERROR
    saying where it looked, never a SKIP (the rack file does not say the check does not apply)."""
    with sim_server() as (_proc, url):
        run = run_suite(tmp_path, "--rack", str(REPO / "rackgate/sim/racks/sim.toml"), "-k", "SRV-LAUNCH-LINT",
                        "--atom-url", url, "--served-model", "moonshotai/Kimi-K3")
    lint = run.outcomes[LINT]
    assert lint.status == "error", (lint, run.stdout[-2000:])
    assert "could not observe" in lint.message and "no process on node1 serves port" in lint.message, lint.message


def test_gsm8k_dir_is_checked_at_start(tmp_path):
    run = run_suite(tmp_path, "-m", "gate", "--atom-url", "http://127.0.0.1:9", "--gsm8k-dir", str(tmp_path))
    assert run.rc != 0 and "--gsm8k-dir" in run.stdout + run.stderr and "test.jsonl" in run.stdout + run.stderr
