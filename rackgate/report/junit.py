"""Read a JUnit XML file (pytest's --junitxml) back into test ids and verdicts."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Verdict:
    status: str  # passed, failed, error, skipped
    message: str


def test_id(classname: str, name: str) -> str:
    """pytest's node id from a testcase's classname ("rackgate.checks.fabric.test_links") and name."""
    return f"{classname.replace('.', '/')}.py::{name}"


def read(path: str | Path) -> dict[str, Verdict]:
    """Test id -> verdict; an unreadable or malformed file reads as no results."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    out: dict[str, Verdict] = {}
    for case in root.iter("testcase"):
        status, msg = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                status = {"failure": "failed"}.get(tag, tag)
                msg = (el.get("message") or "") + "\n" + (el.text or "")
                break
        tid = test_id(case.get("classname", ""), case.get("name", ""))
        prev = out.get(tid)
        # A test that errored in teardown after passing has two entries: the worse one counts.
        if prev is None or _rank(status) > _rank(prev.status):
            out[tid] = Verdict(status, msg)
    return out


def _rank(status: str) -> int:
    return {"passed": 0, "skipped": 1, "failed": 2, "error": 3}.get(status, 0)
