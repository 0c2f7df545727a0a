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
        jobs = subprocess.run(["squeue", "-h", "-o", "%i %T"], env=env, capture_output=True, text=True, timeout=30).stdout
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
        ("sim-b", "test_amdgpu_params[node2]"), ("sim-c", "test_gpu_not_wedged[node3]")}
    assert sorted((tmp_path / "res").glob("slurm-*_*.out")), "the array tasks' Slurm output is in the results"
