"""`rackgate`'s exit codes, from the command as a user runs it: 0 all passed, 1 a finding, 2 a
rack-file error, 3 nothing found but something could not be observed (an unreachable tray)."""
import json
import subprocess
import sys

import pytest

from ..harness import REPO, user_env

pytestmark = pytest.mark.suite

DRIVER = ["-p", "no:cacheprovider", "PLAT-PARAMS"]


def _rackgate(tmp_path, *args):
    v = tmp_path / "verdict.json"
    p = subprocess.run([sys.executable, "-m", "rackgate.cli", f"--verdict-file={v}", f"--junitxml={tmp_path / 'j.xml'}",
                        f"--alluredir={tmp_path / 'allure'}", *args], cwd=REPO, env=user_env(),
                       capture_output=True, text=True, timeout=300)
    return p.returncode, json.loads(v.read_text()) if v.exists() else None, p


@pytest.mark.parametrize("args,code,verdict", [
    ((), 0, "PASS"),
    (("--sim-fault", "params-default"), 1, "FAIL"),
    (("--sim-fault", "tray-unreachable"), 3, "UNKNOWN"),
], ids=["passed", "finding", "unobserved"])
def test_exit_code_follows_the_verdict(tmp_path, args, code, verdict):
    rc, v, p = _rackgate(tmp_path, *args, *DRIVER)
    assert (rc, v and v["verdict"], v and v["exit_code"]) == (code, verdict, code), p.stdout[-2000:] + p.stderr[-2000:]


def test_a_rack_file_error_is_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nsilicn = "B0"\n')
    rc, v, p = _rackgate(tmp_path, f"--rack={bad}", *DRIVER)
    assert rc == 2 and v is None, p.stdout[-2000:] + p.stderr[-2000:]


def test_under_xdist_the_verdict_still_names_each_node(tmp_path):
    rc, v, p = _rackgate(tmp_path, "-n", "2", "--sim-fault", "params-default", *DRIVER)
    assert rc == 1 and {n["node"]: n["verdict"] for n in v["nodes"]} == {
        "node1": "PASS", "node2": "FAIL", "node3": "PASS", "node4": "PASS"}, p.stdout[-2000:] + p.stderr[-2000:]
