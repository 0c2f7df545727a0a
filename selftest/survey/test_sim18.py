"""The survey on the 18-tray sim with mixed faults (racks/sim18.toml): 3 busy, 2 untuned,
1 unreachable, 4 in another pPod, 1 stuck link. Only valid sets are proposed, and every tray
left out is explained with what was seen on it (could not observe for the unreachable one)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rackgate import config
from rackgate.sim.rack import build
from rackgate.survey import pick, run, table
from rackgate.survey.model import FAIL, PASS, UNOBSERVED

from ..harness import REPO, run_suite

pytestmark = pytest.mark.suite

RACK18 = REPO / "racks" / "sim18.toml"
BUSY, UNTUNED, UNREACHABLE, OTHER_PPOD, STUCK = ({"node2", "node9", "node15"}, {"node5", "node12"}, {"node7"},
                                                 {"node14", "node16", "node17", "node18"}, {"node11"})


@pytest.fixture(scope="module")
def surveyed():
    sim = build(config.load(RACK18))
    try:
        reports = run.survey(sim.rack)
        yield sim.rack, reports, pick.propose(reports, 4, top=5)
    finally:
        sim.stop()


def test_every_tray_is_surveyed_with_the_faults_it_has(surveyed):
    _, reports, _ = surveyed
    by = {r.node: r for r in reports}
    assert list(by) == [f"node{i}" for i in range(1, 19)]
    for name, r in by.items():
        bad = {k for k, c in r.cells.items() if not c.ok}
        if name in BUSY:
            assert bad == {"free"}, (name, r.cells)
        elif name in UNTUNED:
            assert "tuned" in bad and bad <= {"tuned", "params"}, (name, r.cells)
        elif name in UNREACHABLE:
            assert r.cells == {"reach": r.cells["reach"]} and r.cells["reach"].status == UNOBSERVED
            assert "unreachable over ssh" in r.cells["reach"].seen and "Connection refused" in r.cells["reach"].seen
        elif name in STUCK:
            assert bad == {"links", "accel"} and "card2" in r.cells["links"].seen and "unconfigured" in r.cells["links"].seen
            assert r.gpus == {0: PASS, 1: PASS, 2: FAIL, 3: PASS}
        else:
            assert bad == set(), (name, r.cells)
    assert {r.domain for r in reports if r.node in OTHER_PPOD} != {r.domain for r in reports if r.node == "node1"}


def test_only_valid_sets_and_every_exclusion_explained(surveyed):
    _, reports, p = surveyed
    by = {r.node: r for r in reports}
    healthy = {f"node{i}" for i in range(1, 19)} - BUSY - UNTUNED - UNREACHABLE - OTHER_PPOD - STUCK
    assert p.sets and p.chosen.nodes == ("node1", "node3", "node4", "node6")
    for s in p.sets:   # the other pPod's four trays are a valid set of their own domain, ranked last
        assert (set(s.nodes) <= healthy or set(s.nodes) == OTHER_PPOD) and len({by[n].domain for n in s.nodes}) == 1
    assert [set(s.nodes) == OTHER_PPOD for s in p.sets] == [False] * (len(p.sets) - 1) + [True]
    assert set(p.excluded) == set(by) - set(p.chosen.nodes)
    for n in BUSY:
        assert p.excluded[n].startswith("free: ")
    assert "port 29500 is listening" in p.excluded["node15"]
    assert "foreign containers" in p.excluded["node2"] and "/dev/kfd" in p.excluded["node9"]
    for n in UNTUNED:
        assert p.excluded[n].startswith("tuned this boot: ") and "older than this boot" in p.excluded[n]
    assert p.excluded["node7"].startswith("could not observe") and "free" not in p.excluded["node7"]
    for n in OTHER_PPOD:
        assert p.excluded[n].startswith("another fabric domain: ppod=5a1c0de0-0000-4000-8000-000000000002")
    assert p.excluded["node11"].startswith("links active: gpu2 (card2, 0000:65:00.0)")
    text = table.proposal(p, reports)
    assert all(f"{n} (tray" in text for n in p.excluded)


def test_pytest_m_survey_reports_each_tray_and_check(tmp_path):
    got = run_suite(tmp_path, "--rack", str(RACK18), "-m", "survey", "rackgate/checks/survey", timeout=240)
    o = got.outcomes
    assert o["rackgate/checks/survey/test_survey.py::test_tray[node2-free]"].status == "failed"
    assert "PLAT-FREE [node2]" in o["rackgate/checks/survey/test_survey.py::test_tray[node2-free]"].message
    assert o["rackgate/checks/survey/test_survey.py::test_tray[node5-tuned]"].status == "failed"
    assert o["rackgate/checks/survey/test_survey.py::test_tray[node11-links]"].status == "failed"
    for t in ("test_reachable[node7]", "test_tray[node7-gpus]", "test_tray[node7-free]", "test_tray[node7-tuned]", "test_tray[node7-links]"):
        assert o[f"rackgate/checks/survey/test_survey.py::{t}"].status == "error"   # could not observe, no verdict
    assert o["rackgate/checks/survey/test_survey.py::test_tray[node7-free]"].message.count("could not observe") >= 1
    assert o["rackgate/checks/survey/test_survey.py::test_node_set"].status == "passed"
    assert o["rackgate/checks/survey/test_survey.py::test_tray[node1-free]"].status == "passed"
    assert len(o) == 18 * 8 + 1  # per tray: reachable + 7 cells (GPUs, free, tuned, params, RAS, links, accel)


@pytest.mark.parametrize("args, said", [
    (["--rack", "racks/nope.toml"], "rack file racks/nope.toml: cannot read it"),
    (["--rack", "racks/sim18.toml", "--pick", "0"], "--pick, --top and --jobs must be at least 1"),
    (["--rack", "racks/sim18.toml", "--sim-fault", "no-such-fault"], "unknown sim fault 'no-such-fault'"),
])
def test_bad_input_is_one_line(args, said):
    r = subprocess.run([sys.executable, "-m", "rackgate.cli", "survey", *args], cwd=REPO, capture_output=True, check=False,
                       text=True, timeout=120)
    assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def _first_trays(n: int, path: Path) -> Path:
    """The shipped 18-tray rack cut to its first n trays, with the faults it has on them."""
    text = RACK18.read_text()
    faults = [f for f in config.load(RACK18).sim.faults if int(re.search(r"@node(\d+)", f).group(1)) <= n]
    text = re.sub(r"(?ms)^faults = \[.*?\]\n", f"faults = {faults!r}\n".replace("'", '"'), text)
    path.write_text(re.sub(r"(?m)^nodes = \d+$", f"nodes = {n}", text))
    return path


def test_written_rack_passes_fabric(tmp_path):
    """--write-rack: the chosen set as a rack file the suite accepts as is; `pytest -m fabric` on it
    passes (its first run on these trays records their link-training baseline). The CLI surveys the
    rack's first 6 trays (node2 busy, node5 untuned: the same chosen set): the pick among all 18 is
    test_only_valid_sets_and_every_exclusion_explained's (the same pick.propose), and the 12 trays
    more were 12 trays' survey that this test's assertions never read."""
    out = tmp_path / "set.toml"
    rack6 = _first_trays(6, tmp_path / "sim6.toml")
    assert config.load(rack6).sim.faults == ["rack-busy@node2", "untuned-after-reboot@node5"]
    env = {"RACKGATE_SIM_WORKDIR": str(tmp_path / "sim"), "PYTHONPATH": str(REPO)}
    import os
    r = subprocess.run([sys.executable, "-m", "rackgate.cli", "survey", "--rack", str(rack6), "--write-rack", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=240, check=False, env={**os.environ, **env})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "ubench07 plan: 4 pairs in 2 rounds" in r.stdout
    written = config.load(out)
    assert [n.name for n in written.nodes] == ["node1", "node3", "node4", "node6"]
    assert [n.tray for n in written.nodes] == [1, 3, 4, 6] and written.sim is None
    run_ = run_suite(tmp_path / "fab", "--rack", str(out), "-m", "fabric", "--record-baseline",
                     "--baseline", str(tmp_path / "baseline.json"), timeout=400)
    assert run_.rc == 0 and run_.outcomes and not run_.not_passed, run_.stdout[-3000:]
    assert any("FAB-ACCEL-ID::node6-card3" in k for k in run_.outcomes)


def test_a_missing_tool_is_could_not_observe_never_a_fault(tmp_path):
    """docker gone from one tray: its 'free' cell is could-not-observe naming docker, the tray is
    excluded for that, and no other tray is touched."""
    rack = config.load(RACK18)
    from rackgate.sim.rack import override
    sim = build(override(override(rack, "sim.nodes", 2), "sim.faults", []), workdir=str(tmp_path / "sim"))
    try:
        # what the shell says for a command that is not installed (this machine may have a docker)
        (sim.dir / "node2" / "bin" / "docker").write_text('#!/bin/sh\necho "sh: 1: docker: not found" >&2\nexit 127\n')
        reports = run.survey(sim.rack)
        r1, r2 = reports
        assert r1.usable
        assert r2.cells["free"].status == UNOBSERVED and "docker is not installed" in r2.cells["free"].seen
        assert all(c.ok for k, c in r2.cells.items() if k != "free")
        p = pick.propose(reports, 1)
        assert p.excluded["node2"].startswith("could not observe (free): node node2: docker is not installed")
    finally:
        sim.stop()
