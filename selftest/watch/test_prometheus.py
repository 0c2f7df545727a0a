"""The verdict where fleets look: a sim rack run with a stuck link writes its metrics textfile
(--metrics-file); the real node_exporter's textfile collector reads it, the real Prometheus scrapes
it, and `rackgate_check_status == 0` names the faulted GPU and nothing else."""
import shutil
import subprocess

import pytest

from ..harness import run_suite
from .promstack import need_binaries, query, stack, wait_for

pytestmark = pytest.mark.suite


def test_prometheus_finds_the_faulted_gpu_of_a_sim_rack(tmp_path):
    need_binaries()
    tf = tmp_path / "textfile"
    run = run_suite(tmp_path, "-m", "fabric", "-k", "fab_state", "--sim-fault", "stuck-link@node2:1",
                    "--metrics-file", str(tf / "rackgate.prom"))
    assert run.verdict is not None and run.verdict["verdict"] == "FAIL", run.stdout[-2000:]
    lint = subprocess.run([shutil.which("promtool") or "promtool", "check", "metrics"], input=(tf / "rackgate.prom").read_text(),
                          capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    with stack(tf, tmp_path) as prom:
        wait_for(prom, "count(rackgate_check_status)", lambda r: bool(r) and float(r[0]["value"][1]) == 16)
        bad = query(prom, "rackgate_check_status == 0")
        assert bad is not None and [(m["metric"]["node"], m["metric"]["gpu"], m["metric"]["row"]) for m in bad] == \
            [("node2", "1", "FAB-STATE")]
        assert query(prom, "node_textfile_scrape_error")[0]["value"][1] == "0"
        until = query(prom, 'rackgate_check_valid_until_seconds{node="node1",gpu="0",row="FAB-STATE"}')
        judged = query(prom, 'rackgate_check_judged_seconds{node="node1",gpu="0",row="FAB-STATE"}')
        assert until and judged and float(until[0]["value"][1]) - float(judged[0]["value"][1]) == 3600
        assert query(prom, "rackgate_last_run_duration_seconds > 0")
