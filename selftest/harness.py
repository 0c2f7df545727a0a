"""Run the acceptance suite as a user would (a pytest subprocess) and read its JUnit verdicts."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Outcome:
    status: str  # passed, failed, error, skipped
    message: str


@dataclass
class SuiteRun:
    rc: int
    stdout: str
    stderr: str
    outcomes: dict[str, Outcome]

    def ids(self, status: str) -> set[str]:
        return {k for k, o in self.outcomes.items() if o.status == status}

    @property
    def not_passed(self) -> set[str]:
        return {k for k, o in self.outcomes.items() if o.status != "passed"}


def _test_id(case: ET.Element) -> str:
    cls = case.get("classname", "")
    return f"{cls.replace('.', '/')}.py::{case.get('name')}"


def parse_junit(path: Path) -> dict[str, Outcome]:
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        status, msg = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                status = {"failure": "failed"}.get(tag, tag)
                msg = (el.get("message") or "") + "\n" + (el.text or "")
                break
        out[_test_id(case)] = Outcome(status, msg)
    return out


def run_suite(tmp_path: Path, *args: str, timeout: float = 300, env: dict | None = None) -> SuiteRun:
    junit = tmp_path / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={junit}",
           f"--alluredir={tmp_path / 'allure'}", *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    outcomes = parse_junit(junit) if junit.exists() else {}
    return SuiteRun(proc.returncode, proc.stdout, proc.stderr, outcomes)
