"""Read a JUnit XML file (pytest's --junitxml) back into test ids and verdicts; mark the items
the verdict rule calls ERROR (could not observe, rackgate's own bug) as <error> in a file pytest wrote."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..ids import is_row_id


@dataclass(frozen=True)
class Verdict:
    status: str  # passed, failed, error, skipped
    message: str


def test_id(classname: str, name: str) -> str:
    """pytest's node id from a testcase's classname ("rackgate.checks.fabric.test_links") and name; a
    declared check's item's classname is its row (PLAT-SHM, name node2: PLAT-SHM::node2, rackgate/ids.py)."""
    return f"{classname}::{name}" if is_row_id(classname) else f"{classname.replace('.', '/')}.py::{name}"


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


def junit_name(nodeid: str, prefix: str = "") -> tuple[str, str]:
    """(classname, name) of a test id as pytest's junitxml writes them: the file's path dotted,
    without .py, any class after it, the function with its parameters as the name
    (rackgate/checks/survey/test_tray.py::test_x[node2] -> rackgate.checks.survey.test_tray, test_x[node2]; a
    declared check's item: PLAT-SHM::node2 -> PLAT-SHM, node2)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = names[0].replace("/", ".").removesuffix(".py")
    names[-1] += bracket + params
    if prefix:
        names.insert(0, prefix)
    return ".".join(names[:-1]), names[-1]


def mark_errors(path: str | Path, nodeids: Iterable[str], prefix: str = "") -> int:
    """Rewrite the <failure> of each of these tests in pytest's JUnit file as an <error> (same
    message and text), with the suite's failures/errors counts moved along; returns how many.
    pytest writes <failure> for every failed call phase and has no way to be told that this failure
    is the suite not being able to look: the verdict rule (hooks/outcome.py) says so."""
    wanted = {junit_name(n, prefix) for n in nodeids}
    if not wanted:
        return 0
    tree = ET.parse(path)
    moved = 0
    for suite in tree.getroot().iter("testsuite"):
        here = 0
        for case in suite.iter("testcase"):
            if (case.get("classname", ""), case.get("name", "")) not in wanted:
                continue
            failure = case.find("failure")
            if failure is not None:
                failure.tag = "error"
                here += 1
        if here:
            suite.set("failures", str(int(suite.get("failures", "0")) - here))
            suite.set("errors", str(int(suite.get("errors", "0")) + here))
            moved += here
    if moved:
        tree.write(path, encoding="utf-8", xml_declaration=True)
    return moved
