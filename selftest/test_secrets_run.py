"""No secret from the rack file leaves a suite run (its output, logs, reports; the redaction alone:
test_secrets.py)."""
import pytest

from .harness import REPO, run_suite
from .test_secrets import API_KEY, HF_TOKEN

pytestmark = pytest.mark.suite


def test_no_secret_leaves_a_run(tmp_path):
    base = (REPO / "rackgate" / "sim" / "racks" / "sim.toml").read_text()
    rack = tmp_path / "secret.toml"
    # The token is also the served model name's suffix nowhere; it lives in the launch env and the
    # api key, which the suite sends and passes to the launch, and must never print.
    rack.write_text(base.replace("[server]\n", f'[server]\napi_key = "{API_KEY}"\n')
                    .replace("[launch.env]", f'[launch.env]\nHF_TOKEN = "{HF_TOKEN}"', 1))
    run = run_suite(tmp_path, "--rack", str(rack), "-m", "gate", "--sim-fault", "bang-tokens", "-rA", "-v")
    assert run.ids("failed"), run.stdout[-2000:]  # a failing run prints the most
    produced = [run.stdout, run.stderr] + [p.read_text(errors="replace") for p in tmp_path.rglob("*")
                                           if p.is_file() and p.name != "secret.toml"]
    for blob in produced:
        assert API_KEY not in blob and HF_TOKEN not in blob
