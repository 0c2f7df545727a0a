"""The baseline file and its comparison without a suite run: tolerances, facts, merging, the header
(the recorded runs: test_regression.py)."""
import json

import pytest

from rackgate import baseline as bl
from rackgate import config
from rackgate.baseline import compare as cmp

pytestmark = pytest.mark.unit


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
