"""The fabric orchestration against the simulated rack: ubench07 rounds leave nothing of ours
running and never touch a process the suite did not start; FAB-TRAINING's baseline handling."""
import json
import os
from pathlib import Path

import pytest

from rackgate import config
from rackgate.fabric import pairs, ubench07
from rackgate.sim.rack import SHIPPED_RACK, build
from rackgate.transport import host_for

from ..harness import REPO, run_suite

pytestmark = pytest.mark.suite


def _sim(tmp_path, *faults):
    return build(config.load(SHIPPED_RACK), list(faults), workdir=str(tmp_path / "sim"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")


def test_bw_round_reports_a_foreign_leftover_and_never_kills_it(tmp_path):
    sim = _sim(tmp_path, "leftover-listener@node3")
    try:
        rack = sim.rack
        hosts = {n.name: host_for(n, rack) for n in rack.nodes}
        leftover = sim.agents[-1].pid
        result = ubench07.run_tool("bw", rack, hosts, pairs.triangles(list(hosts)))
        assert _alive(leftover), "the suite killed a process it did not start"
        node3 = result.scans_of("node3")
        assert node3 and all(leftover in {p.pid for p in s.foreign} for s in node3)
        # the rounds with node3 sat silently and were ended; every process we started is gone
        assert result.ended and all(("node3" in e) or ("node2" in e) or ("node1" in e) for e in result.ended)
        ours = [p for s in result.scans for p in s.found if p.pid != leftover]
        assert all(not _alive(p.pid) for p in ours)
        for rid in ("node2-node3", "node3-node1"):
            run = result.runs[rid]
            assert run.client is not None and "size" not in run.client.output  # no table
        assert "bidir" in result.runs["node1-node2"].client.output
    finally:
        sim.stop()
    assert not _alive(leftover)  # the sim's own teardown ends what the sim started


def test_p2p_bad_tray_signature(tmp_path):
    sim = _sim(tmp_path, "bad-tray@node2")
    try:
        rack = sim.rack
        hosts = {n.name: host_for(n, rack) for n in rack.nodes}
        result = ubench07.run_tool("p2p", rack, hosts, [("node1", "node2"), ("node3", "node4")])
        bad, good = result.runs["node1-node2"], result.runs["node3-node4"]
        assert "[FATAL] ualoe_p2p.cpp:49 hipMemSetAccess(...) -> invalid argument" in bad.client.output
        assert bad.server.ended_by_suite and "RESULT" not in bad.server.output  # the exporter just sat
        assert any("HELLO: Send failed to remote AccId:0" in l.text for l in bad.dmesg["node2"])
        assert bad.dmesg["node1"] == []  # the exporter's side logs nothing
        assert "RESULT OK: 4/4 pairs PASS" in good.server.output and "RESULT OK: 4/4 pairs PASS" in good.client.output
    finally:
        sim.stop()


def test_training_without_baseline_says_so(tmp_path):
    """No baseline: nothing to compare with, so the check could not observe (ERROR), never FAILED."""
    run = run_suite(tmp_path, "-m", "fabric", "-k", "FAB-TRAINING and node1",
                    "--baseline", str(tmp_path / "none.json"), timeout=300)
    assert run.outcomes and all(o.status == "error" for o in run.outcomes.values()), run.stdout[-2000:]
    assert all("no baseline recorded: run `pytest -m fabric --record-baseline`" in o.message
               for o in run.outcomes.values())


def test_shipped_sim_baseline_is_what_recording_gives(tmp_path):
    """rackgate/sim/racks/sim-baseline.json is the healthy sim's own recording; re-record and compare."""
    out = tmp_path / "b.json"
    run = run_suite(tmp_path, "-m", "fabric", "-k", "FAB-TRAINING", "--record-baseline",
                    "--baseline", str(out), timeout=300)
    assert run.rc == 0 and out.exists(), run.stdout[-2000:]
    fresh = {(f["name"], f["where"]): f["value"] for f in json.loads(out.read_text())["facts"]}
    shipped = {(f["name"], f["where"]): f["value"]
               for f in json.loads((REPO / "rackgate/sim/racks/sim-baseline.json").read_text())["facts"]}
    assert fresh == shipped
