"""rackgate fleet --scheduler slurm on a real Slurm: a private one-node cluster (munged, slurmctld,
slurmd started here; slurm_cluster.py), three sim racks -- one healthy, two with different faults --
submitted as one job array; the merged Allure results and fleet.json name each rack's findings and
nothing else, and the drain lines name only the failing racks' trays."""
import json
import subprocess
import sys

import pytest

from ..harness import REPO, user_env
from . import racks
from .slurm_cluster import SlurmMissing, cluster
from .test_local_fleet import _failed_results

pytestmark = pytest.mark.system


@pytest.mark.timeout(900)
def test_three_sim_racks_as_one_slurm_array(tmp_path):
    files = racks.write(tmp_path)
    try:
        ctx = cluster()
        env, host, state = ctx.__enter__()
    except SlurmMissing as e:
        pytest.fail(str(e))
    try:
        p = subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *files, "--scheduler", "slurm",
                            "--results", str(tmp_path / "res"), "--timeout", "600", "--no-render", "--", *racks.SELECT],
                           cwd=REPO, env={**user_env(), **{k: env[k] for k in ("SLURM_CONF",)}},
                           capture_output=True, text=True, timeout=700)
        again = subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", "--failed-only", str(tmp_path / "res"),
                                "--scheduler", "slurm", "--timeout", "600", "--no-render"], cwd=REPO,
                               env={**user_env(), "SLURM_CONF": env["SLURM_CONF"]}, capture_output=True, text=True, timeout=700)
        jobs = subprocess.run(["squeue", "-h", "-o", "%i %T"], env=env, capture_output=True, text=True, timeout=30).stdout
        drained = _drain_applied(tmp_path / "res", env, host)
    finally:
        ctx.__exit__(None, None, None)
    assert not state.exists(), "the cluster's state directory was not removed"
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    assert "submitted 3 rack(s) as slurm job(s)" in p.stdout and "all done" in p.stdout, p.stdout
    assert jobs.strip() == "", f"jobs left in the queue: {jobs}"
    fleet = json.loads((tmp_path / "res" / "fleet.json").read_text())
    assert racks.findings(fleet) == racks.FINDINGS
    assert {r["rack"]: r["exit_code"] for r in fleet["racks"]} == {"sim-a": 0, "sim-b": 1, "sim-c": 1}
    assert _failed_results(tmp_path / "res" / "allure-merged") == {
        ("sim-b", "sim-b: PLAT-PARAMS [node2] amdgpu bring-up module parameters"), ("sim-c", "sim-c: PLAT-WEDGED [node3] GPU not wedged")}
    assert sorted((tmp_path / "res").glob("slurm-*_*.out")), "the array tasks' Slurm output is in the results"
    # --failed-only through Slurm: an array of the two failing racks, each re-running its one failing item
    assert again.returncode == 1 and "submitted 2 rack(s)" in again.stdout, again.stdout[-3000:] + again.stderr[-2000:]
    for rack in ("sim-b", "sim-c"):
        v = json.loads((tmp_path / "res" / rack / "verdict.json").read_text())
        assert v["counts"] == {"pass": 19, "fail": 1, "unknown": 0}, (rack, v["counts"])
    assert drained.startswith("drain") and "PLAT-PARAMS [reboot-or-reload-driver]: gpu_recovery=-1" in drained, drained


def _drain_applied(results, env, host) -> str:
    """--drain-failed --apply against the cluster: sim-b's failing tray given the Slurm node's name
    (the sim's trays are all 127.0.0.1); returns sinfo's state and reason for the node."""
    fleet_json = results / "fleet.json"
    fleet = json.loads(fleet_json.read_text())
    for r in fleet["racks"]:
        for n in r["nodes"]:
            n["host"] = host if (r["rack"], n["node"]) == ("sim-b", "node2") else "not-a-slurm-node"
    fleet_json.write_text(json.dumps(fleet))
    p = subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", "--drain-failed", "--apply", "--results",
                        str(results)], cwd=REPO, env={**user_env(), "SLURM_CONF": env["SLURM_CONF"]},
                       capture_output=True, text=True, timeout=120)
    printed = [line for line in p.stdout.splitlines() if line.startswith("scontrol update")]
    assert len(printed) == 2 and p.returncode == 3, p.stdout + p.stderr  # sim-c's tray: not a Slurm node, refused
    assert "rackgate fleet: scontrol update nodename=not-a-slurm-node" in p.stdout
    return subprocess.run(["sinfo", "-h", "-N", "-n", host, "-o", "%t %E"], env=env, capture_output=True, text=True,
                          timeout=30).stdout.strip()
