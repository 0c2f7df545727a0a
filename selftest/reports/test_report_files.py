"""The run-level Allure files and the plotting helper, as pure functions."""
import json
import re

import pytest

from rackgate.baseline import Fact
from rackgate.report import allure_files, evidence, plots

pytestmark = pytest.mark.suite

PNG = b"\x89PNG\r\n\x1a\n"


def test_plots_are_png_and_bad_input_is_one_line():
    assert plots.bar("kv per rank", ["dp0", "dp1"], [159.4, 120.0], unit="GB", ref=150.0).startswith(PNG)
    assert plots.running("GSM8K", [1.0, 0.5, 0.67], [0.2, 0.1, 0.2], [1.0, 0.9, 0.95], threshold=0.9).startswith(PNG)
    with pytest.raises(plots.PlotError, match="2 labels but 1 values"):
        plots.bar("x", ["a", "b"], [1.0])
    with pytest.raises(plots.PlotError, match="no data"):
        plots.compare("x", [], [], [])


def test_fact_plots_group_families_measured_at_several_places():
    facts = [Fact(f"fabric.bw.{d}", v, p, "GB/s") for d, v in (("read", 5770.0), ("write", 6219.0))
             for p in ("node1-node2", "node2-node3")]
    facts += [Fact("available_for_kv_gb", 159.4, f"node1/dp{r}", "GB") for r in range(4)]
    facts += [Fact("cold_start_s", 2.0, "rack", "s"), Fact("image", "img", "node1")]
    got = dict(allure_files.fact_plots(facts))
    assert set(got) == {"fabric.bw: read / write (GB/s)", "available_for_kv_gb (GB)"}
    assert all(p.startswith(PNG) for p in got.values())


def test_environment_categories_and_globals(tmp_path):
    from rackgate import config
    rack = config.parse('name = "r1"\nimage = "rocm/x:tag"\natom_path = "/app/ATOM"\n'
                        '[[nodes]]\nname = "ct1"\nssh = "root@10.0.0.1"\ndata_ip = "10.0.0.1"\ntray = 1\n')
    props = allure_files.environment(rack, [Fact("hbm_gib", 432.0, "ct1/gpu0")], "fabric")
    allure_files.write_environment(tmp_path, props)
    text = (tmp_path / "environment.properties").read_text()
    assert "image=rocm/x:tag\n" in text and "hbm_gib=432\n" in text and "ct1 (tray 1, 10.0.0.1)" in text
    allure_files.write_categories(tmp_path)
    cats = {c["id"]: c for c in json.loads((tmp_path / "categories.json").read_text())}
    verdict = "rackgate.report.verdict.CheckFailed: FAB-STATE [node2/card1] UALink ...\n  seen: x"
    assert re.fullmatch(cats["rack-verdict"]["messageRegex"], verdict)        # Java: whole message
    assert not re.search(cats["rack-verdict"]["messageRegex"], "AssertionError: assert 1 == 2")
    assert re.search(cats["could-not-observe"]["messageRegex"], "rackgate.transport.result.TransportError: node3: ssh")
    allure_files.write_globals(tmp_path, [("a plot", plots.bar("t", ["a", "b"], [1.0, 2.0]), "image/png")])
    g = json.loads(next(tmp_path.glob("*-globals.json")).read_text())
    assert (tmp_path / g["attachments"][0]["source"]).read_bytes().startswith(PNG)


def test_excerpt_marks_the_signature_line():
    log = "\n".join(f"line {i}" for i in range(20)) + "\nRuntimeError: Per-request cache tensor\nafter"
    out = evidence.excerpt(log, "Per-request cache tensor", before=2, after=1)
    assert out.splitlines() == ["  19 | line 18", "  20 | line 19", "> 21 | RuntimeError: Per-request cache tensor",
                                "  22 | after"]
    assert evidence.excerpt(log, re.compile(r"nothing")) == ""
