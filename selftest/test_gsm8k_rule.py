"""One rule for the self-tests that need real GSM8K rows (the `gsm8k_dir` fixture): the data is
RACKGATE_GSM8K_DIR, else ../shared/data/gsm8k; absent, they are skipped naming the directory and
the variable; with RACKGATE_GSM8K=require (CI) they fail instead -- never a usage error."""
import subprocess
import sys

import pytest

from .harness import REPO, user_env

pytestmark = pytest.mark.suite

USES = "def test_rows(gsm8k_dir):\n    assert (gsm8k_dir / 'test.jsonl').is_file()\n"


def _run(tmp_path, data, **env):
    (tmp_path / "test_uses_rows.py").write_text(USES)
    env = {k: v for k, v in user_env().items() if not k.startswith("RACKGATE_GSM8K")} | env
    env["RACKGATE_GSM8K_DIR"] = str(data)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "selftest.conftest", "-rsf",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_uses_rows.py")],
                          cwd=REPO, capture_output=True, text=True, timeout=120, env=env)


def test_absent_rows_skip_naming_the_directory_and_the_variable(tmp_path):
    empty = tmp_path / "no-rows"
    empty.mkdir()
    out = _run(tmp_path, empty)
    assert out.returncode == 0 and "1 skipped" in out.stdout, out.stdout[-2000:]
    assert f"{empty} lacks test.jsonl and train.jsonl" in out.stdout and "RACKGATE_GSM8K_DIR" in out.stdout


def test_require_turns_the_skip_into_a_failure(tmp_path):
    out = _run(tmp_path, tmp_path / "nowhere", RACKGATE_GSM8K="require")
    assert out.returncode == 1 and "1 error" in out.stdout, out.stdout[-2000:]  # in its setup, as RACKGATE_REALENGINE=require
    assert "nowhere lacks test.jsonl" in out.stdout and "RACKGATE_GSM8K=require" in out.stdout


def test_a_directory_with_both_splits_is_used(tmp_path):
    rows = tmp_path / "rows"
    rows.mkdir()
    for split in ("test", "train"):
        (rows / f"{split}.jsonl").write_text('{"question": "1+1?", "answer": "#### 2"}\n')
    out = _run(tmp_path, rows, RACKGATE_GSM8K="require")
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout[-2000:]
