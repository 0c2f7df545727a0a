"""Regression: facts recorded with provenance (also under xdist), compared with per-fact
tolerances from the rack file, old -> new table in the terminal and the report, a fact missing
now is a failure. The degraded-fabric case end to end is in the fault matrix (matrix/reg.toml)."""
import json
import re

import pytest

from rackgate import baseline as bl

from ..harness import run_suite

pytestmark = pytest.mark.suite

COMPARE = "rackgate/checks/regression/test_regression.py::test_facts_within_tolerance"

# Every fact kind the healthy sim can record cheaply (GSM8K, ~2 min of lm-eval start-up per run,
# is covered by the lower-accuracy matrix case).
CHEAP = ["-k", ("PLAT-GPUS or PLAT-CONTAINER or PLAT-PATCH-SIZE or FAB-BW or "
               "SRV-KV or SRV-ENGINE-ARGS or SRV-TRANSLATION or SRV-BOOT or BENCH-AGGREGATE")]
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


def test_record_under_xdist_merges_every_worker(recorded):
    path, run = recorded
    base = bl.load(path)
    assert base.provenance["rack"] == "sim-4x4" and base.provenance["image"] and base.provenance["time"]
    counts = [f for f in base.facts.values() if f.name == "platform.gpu.count"]
    assert sorted(f.where for f in counts) == ["node1", "node2", "node3", "node4"], base.facts.keys()
    assert all(f.source.startswith("PLAT-GPUS::") for f in counts)
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
    assert sum(1 for k in out if k.startswith("PLAT-GPUS::")) == 4
    assert "rackgate regression: baseline" in run.stdout and "288 -> 432 GiB" in run.stdout


def test_no_baseline_is_said_not_hidden(tmp_path):
    run = run_suite(tmp_path, "-m", "regression", "--baseline", str(tmp_path / "none.json"))
    o = run.outcomes[f"{COMPARE}[no-baseline]"]
    assert o.status == "error" and "could not observe" in o.message and "--record-baseline" in o.message, o.message


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


def test_healthy_sim_against_its_own_baseline_passes_also_under_xdist(recorded, tmp_path):
    """Done-when of the regression issue: the healthy sim, compared with a baseline it recorded,
    passes every fact; under `-n 2` (facts spread over two workers) the verdicts are the serial ones."""
    healthy_baseline, _ = recorded
    base = bl.load(healthy_baseline)
    assert KINDS <= {f.name for f in base.facts.values()}, sorted({f.name for f in base.facts.values()})
    assert base.provenance["image"] and base.provenance["image_id"], base.provenance
    serial = run_suite(tmp_path / "serial", "-m", "regression", "--baseline", str(healthy_baseline), timeout=600,
                       allure=True)
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
