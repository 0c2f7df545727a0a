"""A fleet report a person can read (issue 39): `rackgate fleet` over three sim racks (one healthy,
two with a fault), its merged report rendered by Allure 3 and read in headless Chromium: the tree
groups by rack first, each failing item's page names its rack, the first page says each rack's
PASS / FAIL with its findings, and each rack's own report is reachable from the merged one."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from rackgate.report import render

from ..fleet import racks
from ..harness import REPO, user_env
from .browser import chromium, dump_dom, serve

pytestmark = pytest.mark.suite

# The two checks whose faults sim-b and sim-c carry (their items fail, sim-a's pass): what the report is
# read for. The fleet tests' wider racks.SELECT (three healthy checks more, 36 items over the three
# racks) added passing results no assertion here reads (wave 12).
SELECT = ["-m", "platform", "PLAT-PARAMS",
          "PLAT-WEDGED", "-p", "no:cacheprovider"]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    if not render.ALLURE.exists() or chromium() is None:
        pytest.fail("Allure 3 or Chromium is missing: run `bash scripts/report_tools.sh` (scripts/selftest.sh does)")
    d = tmp_path_factory.mktemp("fleet3")
    p = subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *racks.write(d), "--results", str(d / "res"),
                        "--", *SELECT], cwd=REPO, env=user_env(), capture_output=True, text=True, timeout=900)
    assert p.returncode == 1 and (d / "res" / "report" / "index.html").is_file(), p.stdout[-3000:] + p.stderr[-3000:]
    return d


def _text(page: str) -> str:
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    return "\n".join(s for s in (x.strip() for x in re.sub(r"<[^>]+>", "\n", page).splitlines()) if s)


def test_the_tree_groups_by_rack_first(fleet):
    tree = json.loads((fleet / "res" / "report" / "widgets" / "tree.json").read_text())
    top = {tree["groupsById"][g]["name"]: tree["groupsById"][g]["statistic"] for g in tree["root"]["groups"]}
    assert set(top) == set(racks.FAULTS) and not tree["root"].get("leaves"), top
    assert {r: s.get("failed", 0) for r, s in top.items()} == {"sim-a": 0, "sim-b": 1, "sim-c": 1}


def test_the_rack_of_each_failing_item_is_read_back_from_its_page(fleet):
    out = fleet / "res" / "report"
    failed = [json.loads(f.read_text()) for f in (out / "data" / "test-results").glob("*.json")]
    failed = [t for t in failed if t["status"] == "failed"]
    read = {}
    with serve(out) as base:
        for t in failed:
            page = _text(dump_dom(f"{base}/index.html#{t['id']}", profile=fleet / "chromium"))
            named = re.findall(r"^(sim-[abc]): ([A-Z][A-Z0-9-]+ \[\w+\]) ", page, flags=re.M)   # the item's title
            assert len(set(named)) == 1, page[:3000]
            rack, item = named[0]
            assert re.search(rf"^rack\n{rack}$", page, flags=re.M), page[:3000]     # and its rack parameter
            read[item] = rack
    assert read == {"PLAT-PARAMS [node2]": "sim-b", "PLAT-WEDGED [node3]": "sim-c"}


def test_the_first_page_says_each_racks_verdict_and_findings(fleet):
    with serve(fleet / "res" / "report") as base:
        page = _text(dump_dom(f"{base}/index.html", profile=fleet / "chromium"))
    assert "fleet FAIL: sim-a PASS, sim-b FAIL, sim-c FAIL" in page, page[:3000]
    assert re.search(r"^sim-a\.verdict\nPASS$", page, flags=re.M), page[:3000]
    assert re.search(r"^sim-b\.verdict\nFAIL \(PLAT-PARAMS \[node2\] ", page, flags=re.M), page[:3000]
    assert re.search(r"^sim-c\.verdict\nFAIL \(PLAT-WEDGED \[node3\] ", page, flags=re.M), page[:3000]
    assert re.search(r"^Global Errors\n2$", page, flags=re.M), page[:3000]


def test_each_racks_own_report_is_reachable_from_the_merged_one(fleet):
    res = fleet / "res"
    widget = json.loads((res / "report" / "widgets" / "globals.json").read_text())
    att = next(a for a in widget["attachments"] if a["name"] == "fleet: the verdict of each rack")
    text = (res / "report" / "data" / "attachments" / f"{att['id']}{att['ext']}").read_text()
    links = dict(re.findall(r"^(sim-[abc]): \w+\n(?:  .*\n)*?  its report: (\S+)$", text, flags=re.M))
    assert set(links) == set(racks.FAULTS), text
    with serve(res) as base:
        for rack, link in links.items():
            page = _text(dump_dom(f"{base}/report/{link}", profile=fleet / "chromium"))
            verdict = "PASS" if rack == "sim-a" else "FAIL"
            assert f"{rack}: {verdict}" in page and f"{rack}: test_" not in page, page[:2000]   # its own results only
