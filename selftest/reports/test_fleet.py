"""A fleet of racks in one report (docs/fleet.md): two sim racks' runs, merged with the rack as a
label, rendered once with Allure 3 and read in headless Chromium: each rack's failing check is on
its own page under its rack, and the -m fabric run's rack map (trays x GPUs) is in the report."""
import json

import pytest

from rackgate.report import fleet, render

from ..harness import REPO, run_suite
from .browser import chromium, dump_dom, serve

pytestmark = pytest.mark.suite


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    if not render.ALLURE.exists() or chromium() is None:
        pytest.fail("Allure 3 or Chromium is missing: run `bash scripts/report_tools.sh` (scripts/selftest.sh does)")
    d = tmp_path_factory.mktemp("fleet")
    rack_b = d / "rack-b.toml"
    text = (REPO / "rackgate" / "sim" / "racks" / "sim.toml").read_text()
    rack_b.write_text(text.replace('name = "sim-4x4"', 'name = "sim-4x4-b"', 1)
                      .replace('baseline = "sim-baseline.json"', f'baseline = "{REPO / "rackgate/sim/racks/sim-baseline.json"}"', 1))
    a = run_suite(d / "a", "--sim-fault", "params-default", "PLAT-PARAMS", allure=True)
    b = run_suite(d / "b", "--rack", str(rack_b), "-m", "fabric", "-k", "FAB-STATE",
                  "--sim-fault", "stuck-link", "rackgate/checks/declared.py", allure=True)
    for run in (a, b):
        assert run.rc == 1 and run.outcomes, run.stdout[-2000:] + run.stderr[-2000:]
    counts = fleet.merge(d / "merged", [d / "a" / "allure", d / "b" / "allure"])
    assert counts == {"sim-4x4": 4, "sim-4x4-b": 16}
    return d, render.render(d / "merged", d / "report", name="fleet")


def _tests(out):
    return [json.loads(p.read_text()) for p in (out / "data" / "test-results").glob("*.json")]


def test_each_rack_failure_is_its_own_result_labelled_with_its_rack(merged):
    d, out = merged
    tr = _tests(out)
    assert len(tr) == 20, "the same check on two racks must stay two results"
    failed = {(t["name"], {l["name"]: l["value"] for l in t["labels"]}["rack"]) for t in tr if t["status"] == "failed"}
    assert failed == {("sim-4x4: PLAT-PARAMS [node2] amdgpu bring-up module parameters", "sim-4x4"), ("sim-4x4-b: FAB-STATE [node2-card1] UALink accel_state active on every GPU", "sim-4x4-b")}
    env = (d / "merged" / "environment.properties").read_text()
    assert "racks=sim-4x4, sim-4x4-b" in env and "sim-4x4-b.rack=sim-4x4-b" in env


def test_the_rendered_report_shows_the_rack_and_the_rack_map(merged):
    d, out = merged
    bad = next(t for t in _tests(out) if t["status"] == "failed" and t["name"].startswith("sim-4x4-b: FAB-STATE"))
    with serve(out) as base:
        page = dump_dom(f"{base}/index.html#{bad['id']}", profile=d / "chromium")
        assert "FAB-STATE [node2-card1]" in page and "sim-4x4-b" in page, "the rack is not on the test's page"
        assert "FAB-STATE [node2/gpu1 (card1, 0000:15:00.0)]" in page
        globals_tab = dump_dom(f"{base}/index.html#globalAttachments", profile=d / "chromium")
    assert "rack map (trays x GPUs)" in globals_tab, "the rack map is not in the rendered report's attachments"
    widget = json.loads((out / "widgets" / "globals.json").read_text())
    png = next(a for a in widget["attachments"] if a["name"] == "rack map (trays x GPUs)")
    assert (out / "data" / "attachments" / f"{png['id']}{png['ext']}").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
