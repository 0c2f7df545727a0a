"""The fault matrix's healthy reference (selftest/matrix.py): the cases that compare with a healthy
baseline share one recording of their baseline tests, and each compares with its own part of it
(the facts its tests recorded, the sets its tests record), with synthetic cases and recordings (no
suite runs)."""
import json
import threading
from pathlib import Path

import pytest

from rackgate.report.junit import Verdict as Outcome

from . import matrix as mx
from .harness import SuiteRun

pytestmark = pytest.mark.unit

LOGS, BOOT, GOLDEN = ("SRV-KV", "SRV-BOOT::server",
                      "SRV-GOLDEN")
ITEMS = [{"nodeid": f"{LOGS}::node1", "row": "SRV-KV", "markers": []},
         {"nodeid": BOOT, "row": "SRV-BOOT", "markers": []},
         {"nodeid": f"{GOLDEN}::node3-dp9", "row": "SRV-GOLDEN", "markers": []}]
REFERENCE = {"provenance": {"rack": "sim", "image": "img"},
             "facts": [{"name": "serving.kv_gb", "value": 159.4, "where": "node1/dp0", "source": f"{LOGS}::node1"},
                       {"name": "serving.cold_start_s", "value": 30.0, "source": BOOT},
                       {"name": "fabric.x", "value": 1.0, "source": "FAB-BW::node1-node2"}],
             "sets": {"golden": {"version": 1, "answers": {}}}}


def _case(fault, baseline, row="REG-FACTS"):
    return {"fault": fault, "row": row, "select": "regression", "paths": ["rackgate/checks/regression"],
            "fail": [], "baseline": baseline}


KV, SLOW_BOOT, DRIFT = _case("smaller-kv", [LOGS]), _case("slow-boot", [BOOT]), _case("rank-drift", [GOLDEN], "SRV-GOLDEN")
BY_SELECTION = _case("slow-fabric", ["-m", "fabric", "-k", "FAB-BW"])


def test_own_baseline_is_the_part_its_own_tests_recorded(tmp_path):
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps(REFERENCE))
    kv = json.loads(mx.own_baseline(ref, KV, ITEMS, tmp_path / "kv.json").read_text())
    assert [f["name"] for f in kv["facts"]] == ["serving.kv_gb"] and "sets" not in kv
    assert kv["provenance"] == REFERENCE["provenance"]
    drift = json.loads(mx.own_baseline(ref, DRIFT, ITEMS, tmp_path / "drift.json").read_text())
    assert drift["facts"] == [] and drift["sets"] == REFERENCE["sets"]


def test_only_a_baseline_of_test_paths_joins_the_reference():
    assert mx.reference_paths(KV) == [LOGS] and mx.reference_paths(BY_SELECTION) == []
    assert mx.reference_paths({"fault": "x"}) == []
    assert mx.reference_args([KV, SLOW_BOOT, BY_SELECTION, _case("again", [LOGS])]) == [LOGS, BOOT]
    assert mx.run_cost([KV]) < mx.run_cost([BY_SELECTION])  # no recording of its own


class Recorder:
    """Stands in for record_reference and run_case: what each was called with."""

    def __init__(self, rc=0):
        self.rc, self.references, self.runs, self.lock = rc, [], {}, threading.Lock()

    def reference(self, cases, workdir: Path):
        workdir.mkdir(parents=True, exist_ok=True)
        with self.lock:
            self.references.append(mx.reference_args(cases))
        path = workdir / "reference.json"
        if self.rc == 0:
            path.write_text(json.dumps(REFERENCE))
        return SuiteRun(self.rc, "", "" if self.rc == 0 else "matrix: recording the healthy reference failed", {}), path

    def __call__(self, case, workdir, baseline=None):
        with self.lock:
            self.runs[mx.case_id(case)] = json.loads(baseline.read_text()) if baseline else None
        return SuiteRun(0, "", "", {"rackgate/checks/regression/test_regression.py::test_facts_within_tolerance[x]":
                                    Outcome("passed", "")})


def _runs(cases, rec, solo=False):
    return mx.Runs(cases, jobs=2, solo=solo, rows={}, touches={}, items=ITEMS, runner=rec, reference_runner=rec.reference)


def test_the_cases_share_one_recording_and_each_compares_with_its_own_part():
    rec = Recorder()
    r = _runs([KV, SLOW_BOOT, DRIFT, BY_SELECTION], rec)
    try:
        r.start(["smaller-kv", "slow-boot", "rank-drift", "slow-fabric"])
        runs = {n: r.get(n) for n in ("smaller-kv", "slow-boot", "rank-drift", "slow-fabric")}
    finally:
        r.close()
    assert rec.references == [[LOGS, BOOT, GOLDEN]]  # once, for the three of test paths
    assert [f["name"] for f in rec.runs["smaller-kv"]["facts"]] == ["serving.kv_gb"]
    assert [f["name"] for f in rec.runs["slow-boot"]["facts"]] == ["serving.cold_start_s"]
    assert rec.runs["rank-drift"]["sets"] == REFERENCE["sets"]
    assert rec.runs["slow-fabric"] is None  # a -m selection records its own, in run_case
    assert all(run.rc == 0 for run in runs.values())


def test_a_failed_reference_is_every_sharing_case_s_failure():
    rec = Recorder(rc=4)
    r = _runs([KV, SLOW_BOOT], rec)
    try:
        r.start(["smaller-kv", "slow-boot"])
        runs = [r.get("smaller-kv"), r.get("slow-boot")]
    finally:
        r.close()
    assert rec.runs == {}  # no case ran without its baseline
    assert all(run.rc == 4 and "reference failed" in run.stderr and not run.outcomes for run in runs)
    assert all(mx.judge_case(KV, run, _Row())[0].startswith("the run produced no test results") for run in runs)


def test_solo_mode_records_every_case_alone():
    rec = Recorder()
    r = _runs([KV, SLOW_BOOT], rec, solo=True)
    try:
        r.start(["smaller-kv", "slow-boot"])
        r.get("smaller-kv"), r.get("slow-boot")
    finally:
        r.close()
    assert rec.references == [] and rec.runs == {"smaller-kv": None, "slow-boot": None}


class _Row:
    id, meaning, action = "REG-FACTS", "means", "action"
