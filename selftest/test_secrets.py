"""Secrets from the rack file never appear in output, JUnit or Allure results."""

import pytest

from rackgate import secrets
from rackgate.report.verdict import CheckFailed

pytestmark = pytest.mark.unit

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


