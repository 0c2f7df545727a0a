"""The fleet's plan and its edges: the sbatch lines (one array; a rack on Slurm nodes holds them
exclusively), a run that never finishes is its rack's UNKNOWN (exit 3), never a hang."""
from pathlib import Path

import pytest

from rackgate.fleet import gather, slurm
from rackgate.fleet.plan import RackRun
from rackgate.verdicts import of_runs

pytestmark = pytest.mark.unit


def test_one_array_and_an_exclusive_job_for_a_rack_of_slurm_nodes(tmp_path):
    runs = [RackRun("a", "a.toml", str(tmp_path / "a"), hosts=["10.0.0.1"]),
            RackRun("b", "b.toml", str(tmp_path / "b"), hosts=["gpu07", "gpu08"]),
            RackRun("c", "c.toml", str(tmp_path / "c"), hosts=["10.0.0.3"])]
    jobs = slurm.sbatch_lines(runs, tmp_path / "fleet-plan.json", {"gpu07", "gpu08", "login1"})
    argvs = [a for a, _ in jobs]
    assert ["--exclusive", "--nodelist=gpu07,gpu08", "--nodes=2"] == [x for x in argvs[0] if x.startswith(("--excl", "--node"))]
    assert "--array=0,2" in argvs[1] and not any(x.startswith("--nodelist") for x in argvs[1])
    assert jobs[1][1].rstrip().endswith("fleet-plan.json $SLURM_ARRAY_TASK_ID")


def test_a_rack_without_a_verdict_file_is_unknown_with_its_exit_code(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    (d / "output.txt").write_text("Fatal Python error: Segmentation fault\n")
    v = gather.rack_verdict(RackRun("r", "r.toml", str(d)), 139)
    assert v["verdict"] == "UNKNOWN" and "exited 139" in v["rack_unknown"][0]["why"]
    assert "Segmentation fault" in v["rack_unknown"][0]["why"]
    # the fleet's verdict is its worst rack's (rackgate.verdicts.of_runs), and so its exit code
    assert of_runs([v["verdict"], "PASS"]).exit_code == 3 and of_runs([v["verdict"], "FAIL"]).exit_code == 1
    assert Path(d).exists()


