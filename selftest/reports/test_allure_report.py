"""The Allure report as a person reads it: a faulted suite run, rendered with Allure 3, opened in
headless Chromium; the failing check's diagnosis is on its page, the run's environment and our
categories are in the report."""
import json
import re

import pytest

from rackgate.catalogue import matrix, row
from rackgate.report import render

from ..harness import run_suite
from ..matrix import suite_args
from .browser import chromium, dump_dom, serve

pytestmark = pytest.mark.suite

# A cheap case of the fault matrix (no server): its expected failures are what we look for.
CASE = next((c for c in matrix() if c["fault"] == "params-default"), None) or matrix()[0]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if not render.ALLURE.exists() or chromium() is None:
        pytest.fail("Allure 3 or Chromium is missing: run `bash scripts/report_tools.sh` (scripts/selftest.sh does)")
    d = tmp_path_factory.mktemp("allure")
    run = run_suite(d, *suite_args(CASE), *CASE["fail"], allure=True)
    assert run.rc == 1 and run.outcomes, run.stdout[-2000:] + run.stderr[-2000:]
    out = render.render(d / "allure", d / "report")
    return d, out


def _results(d):
    return [json.loads(p.read_text()) for p in (d / "allure").glob("*-result.json")]


def test_results_carry_environment_and_categories(report):
    d, _ = report
    props = (d / "allure" / "environment.properties").read_text()
    for key in ("rack=", "image=", "atom_path=", "hbm_gib=", "nodes="):
        assert key in props, props
    cats = json.loads((d / "allure" / "categories.json").read_text())
    verdict = next(c for c in cats if c["id"] == "rack-verdict")
    failed = [r for r in _results(d) if r["status"] == "failed"]
    assert failed and all(re.search(verdict["messageRegex"], r["statusDetails"]["message"]) for r in failed)


def test_failing_check_diagnosis_is_on_its_page(report):
    d, out = report
    r = row(CASE["row"])
    tr = [json.loads(p.read_text()) for p in (out / "data" / "test-results").glob("*.json")]
    def story(t):
        return next((lab["value"] for lab in t.get("labels", []) if lab["name"] == "story"), None)
    # the case's own row (its consequences, also_fail, fail in the same run under their own rows)
    failed = [t for t in tr if t.get("status") == "failed" and story(t) == r.id]
    assert failed, f"the rendered report holds no failed {r.id} test"
    labels = {lab["name"]: lab["value"] for lab in failed[0].get("labels", [])}
    assert labels.get("story") == r.id and labels.get("epic") == r.area, labels
    with serve(out) as base:
        page = dump_dom(f"{base}/index.html#{failed[0]['id']}", profile=d / "chromium")
        assert failed[0]["name"] in page, "the test's page did not render"
        for text in (r.id, r.meaning, r.action):
            assert text in page, f"{text!r} is not on the failing check's page"
        cats = dump_dom(f"{base}/index.html#categories", profile=d / "chromium")
        assert "Rack verdicts" in cats, "our categories are not in the report"
