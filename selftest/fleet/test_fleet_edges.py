"""The fleet command at its edges, run: a rack's run cut short, a Kubernetes index, no Slurm tools
(the plan alone: test_fleet_plan.py)."""
import json
import subprocess
import sys

import pytest

from ..harness import REPO, user_env
from . import racks

pytestmark = pytest.mark.suite


def test_a_run_cut_short_is_its_racks_unknown_and_exit_3(tmp_path):
    files = racks.write(tmp_path, ["sim-a", "sim-b"])
    p = subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *files, "--results", str(tmp_path / "res"),
                        "--timeout", "0", "--no-render", "--", *racks.SELECT], cwd=REPO, env=user_env(),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 3, p.stdout[-2000:] + p.stderr[-2000:]
    fleet = json.loads((tmp_path / "res" / "fleet.json").read_text())
    assert {r["rack"]: r["verdict"] for r in fleet["racks"]} == {"sim-a": "UNKNOWN", "sim-b": "UNKNOWN"}
    assert all("did not finish" in r["unknown"][0]["why"] for r in fleet["racks"])
    assert "state=drain" not in subprocess.run(
        [sys.executable, "-m", "rackgate.cli", "fleet", "--drain-failed", "--results", str(tmp_path / "res")],
        cwd=REPO, env=user_env(), capture_output=True, text=True, timeout=120).stdout, "UNKNOWN is never drained"


def test_a_kubernetes_index_runs_its_rack_and_exits_with_its_code(tmp_path):
    from rackgate.fleet import plan
    runs = plan.make(racks.write(tmp_path, ["sim-a", "sim-b"]), tmp_path / "res", racks.SELECT)
    path = plan.save(tmp_path / "res", runs)
    p = subprocess.run([sys.executable, "-m", "rackgate.fleet.task", str(path)], cwd=REPO,
                       env={**user_env(), "JOB_COMPLETION_INDEX": "1"}, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr  # sim-b's finding: FailIndex, no retry
    assert json.loads((tmp_path / "res" / "sim-b" / "verdict.json").read_text())["verdict"] == "FAIL"
    assert not (tmp_path / "res" / "sim-a").exists()


def test_no_slurm_tools_is_one_line_and_exit_2(tmp_path):
    files = racks.write(tmp_path, ["sim-a"])
    (tmp_path / "bin").mkdir()
    env = {**user_env(), "PATH": str(tmp_path / "bin")}   # no sinfo, no sbatch
    p = subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *files, "--scheduler", "slurm", "--results",
                        str(tmp_path / "res")], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "sinfo not found: Slurm's client tools are not installed" in p.stderr
    plan_only = subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *files, "--scheduler", "slurm", "--plan-only",
                                "--results", str(tmp_path / "res")], cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=120)
    assert plan_only.returncode == 0 and "--array=0 " in plan_only.stdout, plan_only.stdout + plan_only.stderr
