"""The Allure results titled by row (rackgate/report/allure_files.py by_row): a declared check's
item is `ROW [place] title` under rack -> area -> row, whatever the module file; a result of no
row is left as pytest wrote it; a second pass changes nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackgate.report import allure_files

pytestmark = pytest.mark.unit

HEADING = allure_files.row_heading("PLAT-SHM", "no stale shared-memory segments")


def _result(d: Path, name: str, full: str, labels: dict[str, str]) -> Path:
    p = d / f"{name}-result.json"
    p.write_text(json.dumps({"name": name, "fullName": full, "titlePath": ["PLAT-SHM"],
                             "labels": [{"name": k, "value": v} for k, v in labels.items()]}))
    return p


def test_a_declared_item_reads_rack_area_row_place(tmp_path: Path) -> None:
    item = _result(tmp_path, "node2", "PLAT-SHM#node2", {"story": "PLAT-SHM", "parentSuite": "sim-4x4",
                                                         "suite": "platform", "subSuite": HEADING})
    mine = _result(tmp_path, "test_mine", "selftest.x#test_mine", {"epic": "mine"})
    assert allure_files.by_row(tmp_path) == 1
    got = json.loads(item.read_text())
    assert got["titlePath"] == ["sim-4x4", "platform", "PLAT-SHM no stale shared-memory segments"]
    assert got["name"] == "PLAT-SHM [node2] no stale shared-memory segments"
    assert json.loads(mine.read_text())["name"] == "test_mine"
    assert allure_files.by_row(tmp_path) == 0
