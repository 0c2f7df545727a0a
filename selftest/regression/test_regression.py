"""Regression: facts recorded with provenance (also under xdist), compared with per-fact
tolerances from the rack file, old -> new table in the terminal and the report, a fact missing
now is a failure. The degraded-fabric case end to end is in the fault matrix (matrix/reg.toml)."""
import json

import pytest

from rackgate import baseline as bl
from rackgate import config
from rackgate.baseline import compare as cmp

from ..harness import run_suite

SELECT = ["-m", "platform", "-k", "test_gpu_count_and_hbm"]
COMPARE = "tests/regression/test_regression.py::test_facts_within_tolerance"


def _expect(toml: str = ""):
    return config.parse("[sim]\n" + toml).regression


def _facts(**values):
    return {k: bl.Fact(k.split("@")[0], v, k.partition("@")[2], "GB/s") for k, v in values.items()}


def test_tolerances_by_direction():
    e = _expect('[regression.facts."fabric.bw.*"]\ndirection = "drop"\nrel = 0.10\n')
    old = _facts(**{"fabric.bw.read@a-b": 100.0, "fabric.bw.read@b-c": 100.0, "fabric.bw.read@c-a": 100.0})
    new = _facts(**{"fabric.bw.read@a-b": 91.0, "fabric.bw.read@b-c": 89.0, "fabric.bw.read@c-a": 150.0})
    moves = {m.where: m for m in cmp.compare(old, new, e)}
    assert moves["a-b"].ok and not moves["b-c"].ok and moves["c-a"].ok  # a rise never fails a "drop" fact
    assert "100 -> 89" in moves["b-c"].why and "may drop 10%" in moves["b-c"].why
    # the rack file's table adds to the defaults, it does not replace them
    assert e.for_fact("gsm8k_quick_accuracy")[1].abs == pytest.approx(0.015)


def test_missing_new_equal_and_report():
    e = _expect()
    old = {"hbm_gib@n1/gpu0": bl.Fact("hbm_gib", 432.0, "n1/gpu0", source="t::a"),
           "hbm_gib@n1/gpu1": bl.Fact("hbm_gib", 432.0, "n1/gpu1", source="t::a"),
           "image@n1": bl.Fact("image", "img:old", "n1")}
    new = {"hbm_gib@n1/gpu0": bl.Fact("hbm_gib", 288.0, "n1/gpu0"),
           "image@n1": bl.Fact("image", "img:new", "n1"), "gpu_count@n1": bl.Fact("gpu_count", 4, "n1")}
    moves = {m.key: m for m in cmp.compare(old, new, e)}
    assert not moves["hbm_gib@n1/gpu0"].ok                                     # equal: any move fails
    assert not moves["hbm_gib@n1/gpu1"].ok and moves["hbm_gib@n1/gpu1"].change == "missing"
    assert "t::a" in moves["hbm_gib@n1/gpu1"].why
    assert moves["image@n1"].ok and moves["gpu_count@n1"].change == "new"
    text = cmp.table(list(moves.values()))
    assert "432 -> 288" in text and "432 -> -" in text and "REGRESSED" in text


def test_facts_are_values_and_the_file_is_atomic(tmp_path):
    f = bl.Facts()
    with pytest.raises(TypeError):
        f.record("x", {"a": 1})
    f.source = "tests/x.py::t"
    f.record("x", 1.5, where="n1", unit="s")
    p = bl.write(tmp_path / "b.json", f.all(), {"rack": "r", "image": "i"})
    assert not list(tmp_path.glob(".*tmp"))
    got = bl.load(p)
    assert got.get("x", "n1").source == "tests/x.py::t" and got.provenance["time"]
    body = json.loads(p.read_text())
    body["facts"][0]["added_later"] = 1  # a newer baseline's extra field must not break an older reader
    p.write_text(json.dumps(body))
    assert bl.load(p).get("x", "n1").value == 1.5
    p.write_text("{not json")
    with pytest.raises(bl.BaselineError, match="not a rackgate baseline"):
        bl.load(p)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A baseline recorded on the healthy sim by two xdist workers."""
    d = tmp_path_factory.mktemp("record")
    run = run_suite(d, *SELECT, "-n", "2", "--record-baseline", "--baseline", str(d / "baseline.json"))
    assert run.rc == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return d / "baseline.json", run


def test_record_under_xdist_merges_every_worker(recorded):
    path, run = recorded
    base = bl.load(path)
    assert base.provenance["rack"] == "sim-4x4" and base.provenance["image"] and base.provenance["time"]
    counts = [f for f in base.facts.values() if f.name == "gpu_count"]
    assert sorted(f.where for f in counts) == ["node1", "node2", "node3", "node4"], base.facts.keys()
    assert all(f.source.startswith("tests/platform/test_gpus.py::test_gpu_count_and_hbm[") for f in counts)
    assert "recorded 20 facts as the baseline" in run.stdout


def test_regression_run_shows_old_new_and_names_the_fact(recorded, tmp_path):
    """An older baseline (hand-edited from the recorded one): one GPU had 288 GiB, and a GPU
    that this rack no longer has. Both must fail, named, with the table; gpu_count passes."""
    path, _ = recorded
    body = json.loads(path.read_text())
    hbm = [f for f in body["facts"] if f["name"] == "hbm_gib"]
    hbm[0]["value"] = 288.0
    body["facts"].append({**hbm[1], "where": "node1/gpu9"})
    old = tmp_path / "older.json"
    old.write_text(json.dumps(body))
    run = run_suite(tmp_path, "-m", "regression", "--baseline", str(old))
    out = run.outcomes
    assert out[f"{COMPARE}[hbm_gib]"].status == "failed", run.stdout[-3000:]
    assert out[f"{COMPARE}[gpu_count]"].status == "passed", run.stdout[-3000:]
    msg = out[f"{COMPARE}[hbm_gib]"].message
    assert msg.lstrip().startswith("REG-FACTS [hbm_gib]") and "2 of 17 hbm_gib figures" in msg, msg
    assert f"{hbm[0]['where']}" in msg and "288 -> 432" in msg and "node1/gpu9" in msg and "missing" in msg
    # the producers ran again without being named: -m regression selected them from the baseline
    assert sum(1 for k in out if k.startswith("tests/platform/test_gpus.py::")) == 4
    assert "rackgate regression: baseline" in run.stdout and "288 -> 432 GiB" in run.stdout


def test_no_baseline_is_said_not_hidden(tmp_path):
    run = run_suite(tmp_path, "-m", "regression", "--baseline", str(tmp_path / "none.json"))
    o = run.outcomes[f"{COMPARE}[no-baseline]"]
    assert o.status == "failed" and "could not observe" in o.message and "--record-baseline" in o.message, o.message
