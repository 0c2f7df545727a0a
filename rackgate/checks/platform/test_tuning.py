"""PLAT-TUNED: perf_setup's tuning applies to this boot (newest report newer than `uptime -s`,
no failed perf step, and a "mode D" report backed by the loaded parameters)."""
import pytest

from rackgate.gates import plat as judge
from rackgate.probes import modules, perf_setup
from rackgate.report.verdict import check


@pytest.mark.row("PLAT-TUNED")
def test_perf_setup_this_boot(node, rack, evidence):
    p = rack.platform
    got = perf_setup.tuning(node.host, p.perf_report_glob)
    params = modules.amdgpu_params(node.host, tuple(p.perf_mode_d_params))
    evidence.attach("boot and newest report",
                    f"uptime -s: {got.boot.since} ({got.boot.epoch})\n"
                    f"report: {got.report.path + f' (mtime {got.report.mtime})' if got.report else '(none)'}\n"
                    + "\n".join(f"{k}={v}" for k, v in params.items()) + "\n\n" + got.tail)
    bad = judge.tuned(got, params, p.perf_mode_d_params, p.perf_report_slack_s, where=node.name)
    check(not bad, "PLAT-TUNED", node.name, "; ".join(bad))
