"""Secrets from the rack file never appear in output, JUnit or Allure results."""

import pytest

from rackgate import secrets
from rackgate.report.verdict import CheckFailed

from .harness import REPO, run_suite

pytestmark = pytest.mark.suite

API_KEY = "sk-rackgate-test-0123456789"
HF_TOKEN = "hf_rackgatetesttoken987"


def test_redact_masks_registered_values():
    secrets.register(API_KEY)
    secrets.register_env({"HF_TOKEN": HF_TOKEN, "PLAIN": "visible-value"})
    text = f"key={API_KEY} token={HF_TOKEN} plain=visible-value"
    assert secrets.redact(text) == f"key={secrets.MASK} token={secrets.MASK} plain=visible-value"
    err = CheckFailed("SRV-SANITY", "node1", f"the server said {HF_TOKEN}")
    assert HF_TOKEN not in str(err) and secrets.MASK in str(err)


def test_every_name_the_readme_lists_is_a_secret():
    # README: env values named *TOKEN*, *SECRET*, *PASSWORD*, *KEY* (any KEY, not only API_KEY).
    env = {"NGC_TOKEN": "v-token-1", "AWS_SECRET_ACCESS_KEY": "v-secret-2", "DB_PASSWORD": "v-password-3",
           "WANDB_KEY": "v-key-4", "ssh_key_passphrase": "v-key-5", "GCP_CREDENTIALS": "v-cred-6",
           "HIP_VISIBLE_DEVICES": "0,1,2,3"}
    secrets.register_env(env)
    shown = secrets.redact(" ".join(env.values()))
    assert shown == " ".join([secrets.MASK] * 6 + ["0,1,2,3"])


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
