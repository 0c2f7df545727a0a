"""Regression: facts recorded with provenance (also under xdist), compared with per-fact
tolerances from the rack file, old -> new table in the terminal and the report, a fact missing
now is a failure. The degraded-fabric case end to end is in the fault matrix (matrix/reg.toml)."""
import json
import re

import pytest

from rackgate import baseline as bl
from rackgate import config
from rackgate.baseline import compare as cmp

from ..harness import run_suite

pytestmark = pytest.mark.suite

COMPARE = "rackgate/checks/regression/test_regression.py::test_facts_within_tolerance"

# Every fact kind the healthy sim can record cheaply (GSM8K, ~2 min of lm-eval start-up per run,
# is covered by the lower-accuracy matrix case).
CHEAP = ["-k", ("test_plat_gpus or test_plat_container or test_plat_patch_size or test_bandwidth or "
               "test_kv_budget or test_engine_kwargs or test_translation or test_boot or test_per_gpu_throughput")]
KINDS = {"platform.gpu.hbm_gib", "platform.image.tag", "platform.image.id", "platform.patch.size_bytes",
         "fabric.ubench07.read_gbps", "serving.kv.available_gb", "serving.kv.blocks", "serving.engine.kwarg",
         "serving.translation.translated", "serving.cold_start_s", "bench.tok_s_per_gpu", "bench.ttft_ms",
         "bench.tpot_ms"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One baseline recorded on the healthy sim by two xdist workers (every cheap fact kind),
    shared by this module's tests."""
    d = tmp_path_factory.mktemp("record")
    run = run_suite(d, *CHEAP, "-n", "2", "--record-baseline", "--baseline", str(d / "baseline.json"), timeout=600)
    assert run.rc == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return d / "baseline.json", run


def _expect(toml: str = ""):
    return config.parse("[sim]\n" + toml).regression


def _facts(**values):
    return {k: bl.Fact(k.split("@")[0], v, k.partition("@")[2], "GB/s") for k, v in values.items()}


def test_tolerances_by_direction():
    # an old name in the rack file is read as its current one; "drop" is "higher is better"
    e = _expect('[regression.facts."fabric.bw.read"]\ndirection = "drop"\nrel = 0.10\n')
    r = "fabric.ubench07.read_gbps"
    old = _facts(**{f"{r}@a-b": 100.0, f"{r}@b-c": 100.0, f"{r}@c-a": 100.0})
    new = _facts(**{f"{r}@a-b": 91.0, f"{r}@b-c": 89.0, f"{r}@c-a": 150.0})
    moves = {m.where: m for m in cmp.compare(old, new, e)}
    assert moves["a-b"].ok and not moves["b-c"].ok and moves["c-a"].ok  # a rise never fails a "drop" fact
    assert "100 -> 89" in moves["b-c"].why and "may drop 10%" in moves["b-c"].why
    assert moves["b-c"].band == (90.0, None)
    # the rack file's table adds to the defaults, it does not replace them; names are exact
    assert e.for_fact("accuracy.gsm8k.full")[1].abs == pytest.approx(0.015)
    assert e.for_fact("accuracy.gsm8k.full.x") == ("", e.default)


def test_missing_new_equal_and_report():
    e = _expect()
    h, img, n = "platform.gpu.hbm_gib", "platform.image.tag", "platform.gpu.count"
    old = {f"{h}@n1/gpu0": bl.Fact(h, 432.0, "n1/gpu0", source="t::a"),
           f"{h}@n1/gpu1": bl.Fact(h, 432.0, "n1/gpu1", source="t::a"),
           f"{img}@n1": bl.Fact(img, "img:old", "n1")}
    new = {f"{h}@n1/gpu0": bl.Fact(h, 288.0, "n1/gpu0"),
           f"{img}@n1": bl.Fact(img, "img:new", "n1"), f"{n}@n1": bl.Fact(n, 4, "n1")}
    moves = {m.key: m for m in cmp.compare(old, new, e)}
    assert not moves[f"{h}@n1/gpu0"].ok                                     # equal: any move fails
    assert not moves[f"{h}@n1/gpu1"].ok and moves[f"{h}@n1/gpu1"].change == "missing"
    assert "t::a" in moves[f"{h}@n1/gpu1"].why
    assert moves[f"{img}@n1"].ok and moves[f"{n}@n1"].change == "new"
    text = cmp.table(list(moves.values()))
    assert "432 -> 288" in text and "432 -> -" in text and "REGRESSED" in text


def test_facts_are_values_and_the_file_is_atomic(tmp_path):
    f = bl.Facts()
    with pytest.raises(TypeError):
        f.record("x", {"a": 1})
    f.source = "rackgate/checks/x.py::t"
    f.record("x", 1.5, where="n1", unit="s")
    p, _ = bl.write(tmp_path / "b.json", f.all(), {"rack": "r", "image": "i"})
    assert not list(tmp_path.glob(".*tmp"))
    got = bl.load(p)
    assert got.get("x", "n1").source == "rackgate/checks/x.py::t" and got.provenance["time"]
    body = json.loads(p.read_text())
    body["facts"][0]["added_later"] = 1  # a newer baseline's extra field must not break an older reader
    p.write_text(json.dumps(body))
    assert bl.load(p).get("x", "n1").value == 1.5
    p.write_text("{not json")
    with pytest.raises(bl.BaselineError, match="not a rackgate baseline"):
        bl.load(p)


def test_record_under_xdist_merges_every_worker(recorded):
    path, run = recorded
    base = bl.load(path)
    assert base.provenance["rack"] == "sim-4x4" and base.provenance["image"] and base.provenance["time"]
    counts = [f for f in base.facts.values() if f.name == "platform.gpu.count"]
    assert sorted(f.where for f in counts) == ["node1", "node2", "node3", "node4"], base.facts.keys()
    assert all(f.source.startswith("rackgate/checks/test_declared.py::test_plat_gpus[") for f in counts)
    said = re.search(r"recorded (\d+) facts as the baseline", run.stdout)
    assert said and int(said.group(1)) == len(base.facts), run.stdout[-2000:]


def test_regression_run_shows_old_new_and_names_the_fact(recorded, tmp_path):
    """An older baseline (hand-edited from the recorded one): one GPU had 288 GiB, and a GPU
    that this rack no longer has. Both must fail, named, with the table; gpu_count passes."""
    path, _ = recorded
    body = json.loads(path.read_text())
    # the GPU inventory only: the regression run then re-runs only its producers
    body["facts"] = [f for f in body["facts"] if f["name"] in ("platform.gpu.count", "platform.gpu.hbm_gib")]
    hbm = [f for f in body["facts"] if f["name"] == "platform.gpu.hbm_gib"]
    hbm[0]["value"] = 288.0
    body["facts"].append({**hbm[1], "where": "node1/gpu9"})
    old = tmp_path / "older.json"
    old.write_text(json.dumps(body))
    run = run_suite(tmp_path, "-m", "regression", "--baseline", str(old))
    out = run.outcomes
    assert out[f"{COMPARE}[platform.gpu.hbm_gib]"].status == "failed", run.stdout[-3000:]
    assert out[f"{COMPARE}[platform.gpu.count]"].status == "passed", run.stdout[-3000:]
    msg = out[f"{COMPARE}[platform.gpu.hbm_gib]"].message
    assert msg.lstrip().startswith("REG-FACTS [platform.gpu.hbm_gib]") and "2 of 17 platform.gpu.hbm_gib figures" in msg, msg
    assert f"{hbm[0]['where']}" in msg and "288 -> 432" in msg and "node1/gpu9" in msg and "missing" in msg
    # the producers ran again without being named: -m regression selected them from the baseline
    assert sum(1 for k in out if k.startswith("rackgate/checks/test_declared.py::test_plat_gpus[")) == 4
    assert "rackgate regression: baseline" in run.stdout and "288 -> 432 GiB" in run.stdout


def test_no_baseline_is_said_not_hidden(tmp_path):
    run = run_suite(tmp_path, "-m", "regression", "--baseline", str(tmp_path / "none.json"))
    o = run.outcomes[f"{COMPARE}[no-baseline]"]
    assert o.status == "error" and "could not observe" in o.message and "--record-baseline" in o.message, o.message


def test_old_baselines_load_under_the_current_names(tmp_path):
    """A baseline written before the naming scheme: old names map to new ones, and the GSM8K
    facts once keyed by the server URL (a new port every run) become the rack's."""
    p = tmp_path / "old.json"
    p.write_text(json.dumps({"provenance": {"rack": "r"}, "facts": [
        {"name": "gsm8k_quick_accuracy", "value": 0.97, "where": "http://127.0.0.1:41234"},
        {"name": "available_for_kv_gb", "value": 159.4, "where": "node1/dp0", "unit": "GB"},
        {"name": "fabric.bw.read", "value": 5770.0, "where": "node1-node2"}]}))
    got = bl.load(p)
    assert set(got.facts) == {"accuracy.gsm8k.quick@rack", "serving.kv.available_gb@node1/dp0",
                              "fabric.ubench07.read_gbps@node1-node2"}


def test_recording_again_merges_into_a_median_with_its_spread(tmp_path):
    """Three recordings of one rack and image: the median, the samples, and a band widened by
    their spread; a recording of another image replaces the baseline and says so."""
    p, prov = tmp_path / "b.json", {"rack": "r", "image": "img:1", "image_id": "sha256:1"}
    for v in (100.0, 90.0, 110.0):
        _, how = bl.write(p, [bl.Fact("bench.tok_s_per_gpu", v, "rack"), bl.Fact("serving.engine.kwarg", "auto",
                                                                                    "kv_cache_dtype")], prov, merge=True)
    assert "merged as run 3" in how
    base = bl.load(p)
    tput = base.get("bench.tok_s_per_gpu", "rack")
    assert tput.value == 100.0 and tput.samples == [100.0, 90.0, 110.0] and base.provenance["runs"] == 3
    assert tput.spread == pytest.approx(1.4826 * 10)
    e = _expect()  # bench.tok_s_per_gpu: higher is better, 15% or 3 sigma of the samples
    (m,) = cmp.compare({"k": tput}, {"k": bl.Fact("bench.tok_s_per_gpu", 60.0, "rack")}, e)
    assert m.ok and m.band[0] == pytest.approx(100 - 3 * 14.826)  # within 3 sigma: noise, not a regression
    (m,) = cmp.compare({"k": tput}, {"k": bl.Fact("bench.tok_s_per_gpu", 50.0, "rack")}, e)
    assert not m.ok and "3σ" in m.why
    _, how = bl.write(p, [bl.Fact("bench.tok_s_per_gpu", 10.0, "rack")], {**prov, "image": "img:2"}, merge=True)
    assert "replaced" in how and "img:1 -> img:2" in how and bl.load(p).get("bench.tok_s_per_gpu", "rack").samples == []


def test_header_names_old_and_new_image():
    text = cmp.header({"image": "img:1", "image_id": "sha256:a", "rack": "r", "atom_commit": "abc"},
                      {"image": "img:2", "image_id": "sha256:b", "rack": "r"})
    first = text.splitlines()[0]
    assert first.startswith("image:") and "img:1 -> img:2" in first
    assert "r -> r   (same)" in text and "abc -> ?" in text


def _cli(*args, cwd=None):
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-m", "rackgate.cli", "compare", *map(str, args)], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd or root, env=env)


def test_compare_two_recorded_runs(tmp_path):
    """`rackgate compare OLD NEW`: header, table, verdict, exit 1 on a regression, 0 without;
    one JUnit testcase and one Allure result (with its picture) per fact name."""
    from rackgate.report import junit
    prov = {"rack": "r", "image": "img:1", "image_id": "sha256:1", "atom_commit": "abc"}
    kv = [bl.Fact("serving.kv.available_gb", 159.4, f"n1/dp{r}", "GB", source="t::kv") for r in range(2)]
    kw = bl.Fact("serving.engine.kwarg", "fp8", "kv_cache_dtype", source="t::kw")
    old, _ = bl.write(tmp_path / "old.json", [*kv, kw], prov)
    new, _ = bl.write(tmp_path / "new.json", [kv[0], bl.Fact("serving.kv.available_gb", 140.0, "n1/dp1", "GB"), kw,
                                              bl.Fact("bench.tpot_ms", 9.0, "rack", "ms")],
                      {**prov, "image": "img:2", "image_id": "sha256:2"})
    run = _cli(old, new, "--junitxml", tmp_path / "j.xml", "--alluredir", tmp_path / "allure")
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert any(x.startswith("image:") and "img:1 -> img:2" in x for x in lines), run.stdout
    assert "159.4 -> 140 GB" in run.stdout and "REGRESSED" in run.stdout and "1 of 4 facts" in run.stdout
    assert "- -> 9 ms" in run.stdout and "new" in run.stdout  # one side only: listed, not dropped
    got = junit.read(tmp_path / "j.xml")
    item = "rackgate/checks/regression/test_regression.py::test_facts_within_tolerance"
    assert {k: v.status for k, v in got.items()} == {f"{item}[serving.kv.available_gb]": "failed",
                                                     f"{item}[serving.engine.kwarg]": "passed",
                                                     f"{item}[bench.tpot_ms]": "passed"}
    assert "n1/dp1" in got[f"{item}[serving.kv.available_gb]"].message
    results = [json.loads(p.read_text()) for p in (tmp_path / "allure").glob("*-result.json")]
    kvres = next(r for r in results if r["name"].endswith("[serving.kv.available_gb]"))
    assert kvres["status"] == "failed" and any(a["type"] == "image/png" for a in kvres["attachments"])
    assert _cli(old, old).returncode == 0
    (tmp_path / "bad.json").write_text("{")
    bad = _cli(old, tmp_path / "bad.json")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "not a rackgate baseline" in bad.stderr
    assert _cli(old, tmp_path / "none.json").returncode == 2


def test_the_sim_never_writes_its_shipped_baseline():
    """Recording on the sim goes to reports/ unless another path is given, also when the path
    given is the shipped (tracked) sim-baseline.json."""
    from types import SimpleNamespace as NS

    from rackgate.fixtures.baseline import _path
    sim, real = NS(sim=object(), baseline="racks/sim-baseline.json"), NS(sim=None, baseline="racks/b.json")

    def cfg(given):
        return NS(option=NS(baseline=given))
    assert _path(cfg(None), sim, for_writing=True) == "reports/sim-baseline.json"
    assert _path(cfg("racks/sim-baseline.json"), sim, for_writing=True) == "reports/sim-baseline.json"
    assert _path(cfg("/tmp/x.json"), sim, for_writing=True) == "/tmp/x.json"
    assert _path(cfg("racks/sim-baseline.json"), sim) == "racks/sim-baseline.json"  # reading it is fine
    assert _path(cfg(None), real, for_writing=True) == "racks/b.json"


def test_healthy_sim_against_its_own_baseline_passes_also_under_xdist(recorded, tmp_path):
    """Done-when of the regression issue: the healthy sim, compared with a baseline it recorded,
    passes every fact; under `-n 2` (facts spread over two workers) the verdicts are the serial ones."""
    healthy_baseline, _ = recorded
    base = bl.load(healthy_baseline)
    assert KINDS <= {f.name for f in base.facts.values()}, sorted({f.name for f in base.facts.values()})
    assert base.provenance["image"] and base.provenance["image_id"], base.provenance
    serial = run_suite(tmp_path / "serial", "-m", "regression", "--baseline", str(healthy_baseline), timeout=600)
    compared = {k: o.status for k, o in serial.outcomes.items() if k.startswith(COMPARE)}
    assert len(compared) >= len(KINDS) and set(compared.values()) == {"passed"}, serial.stdout[-4000:]
    assert "image:" in serial.stdout and "all " in serial.stdout and "facts within tolerance" in serial.stdout
    # the picture per fact (old vs new with the band) is attached to the comparison's Allure result
    results = [json.loads(p.read_text()) for p in (tmp_path / "serial" / "allure").glob("*-result.json")]
    kv = next(r for r in results if r["name"].endswith("[serving.kv.available_gb]"))
    assert any(a["type"] == "image/png" and "baseline vs this run" in a["name"] for a in kv["attachments"]), kv
    spread = run_suite(tmp_path / "xdist", "-m", "regression", "-n", "2", "--baseline", str(healthy_baseline),
                       timeout=600)
    assert {k: o.status for k, o in spread.outcomes.items()} == {k: o.status for k, o in serial.outcomes.items()}, \
        spread.stdout[-4000:]


def test_the_sim_answers_at_its_image_speed_not_this_machines():
    """The sim's benchmark figures are its image's (issue 15: the healthy sim compared with its own
    baseline passes under load): no answer comes sooner than the image's time to first token, so
    the paced part, not this machine's CPU, makes the throughput."""
    import time

    import requests

    from rackgate.sim.engine.routes import FIRST_TOKEN_S

    from ..simserver import sim_server
    with sim_server() as (_, url):
        for prompt in ("alpha river", "stone " * 256):
            t0 = time.monotonic()
            r = requests.post(url + "/v1/completions", json={"model": "moonshotai/Kimi-K3", "prompt": prompt,
                                                             "max_tokens": 32}, timeout=60)
            assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] > 0, r.text
            assert time.monotonic() - t0 >= FIRST_TOKEN_S
