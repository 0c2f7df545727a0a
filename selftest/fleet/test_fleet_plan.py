"""The fleet's plan and its edges: the sbatch lines (one array; a rack on Slurm nodes holds them
exclusively), a run that never finishes is its rack's UNKNOWN (exit 3), never a hang."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rackgate.fleet import gather, slurm
from rackgate.fleet.plan import RackRun

from ..harness import REPO, user_env
from . import racks

pytestmark = pytest.mark.suite


def test_one_array_and_an_exclusive_job_for_a_rack_of_slurm_nodes(tmp_path):
    runs = [RackRun("a", "a.toml", str(tmp_path / "a"), hosts=["10.0.0.1"]),
            RackRun("b", "b.toml", str(tmp_path / "b"), hosts=["gpu07", "gpu08"]),
            RackRun("c", "c.toml", str(tmp_path / "c"), hosts=["10.0.0.3"])]
    jobs = slurm.sbatch_lines(runs, tmp_path / "fleet-plan.json", {"gpu07", "gpu08", "login1"})
    argvs = [a for a, _ in jobs]
    assert ["--exclusive", "--nodelist=gpu07,gpu08", "--nodes=2"] == [x for x in argvs[0] if x.startswith(("--excl", "--node"))]
    assert "--array=0,2" in argvs[1] and not any(x.startswith("--nodelist") for x in argvs[1])
    assert jobs[1][1].rstrip().endswith("fleet-plan.json $SLURM_ARRAY_TASK_ID")


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


def test_a_rack_without_a_verdict_file_is_unknown_with_its_exit_code(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    (d / "output.txt").write_text("Fatal Python error: Segmentation fault\n")
    v = gather.rack_verdict(RackRun("r", "r.toml", str(d)), 139)
    assert v["verdict"] == "UNKNOWN" and "exited 139" in v["rack_unknown"][0]["why"]
    assert "Segmentation fault" in v["rack_unknown"][0]["why"]
    assert gather.exit_of([v, {"verdict": "PASS"}]) == 3 and gather.exit_of([v, {"verdict": "FAIL"}]) == 1
    assert Path(d).exists()


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
