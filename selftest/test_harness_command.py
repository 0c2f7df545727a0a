"""The self-tests' suite-run command line (selftest/harness.py suite_command): a run writes its Allure
results only when the self-test asks for them -- the checkout's ini names reports/allure-results, so a
run that asks none must say so, or every self-test's run would write its results (and the run-level
plots, ~0.75 CPU s a platform run) into the checkout's reports/."""
import shlex
from pathlib import Path

import pytest

from .harness import REPO, suite_command

pytestmark = pytest.mark.unit


def _alluredir(cmd: list[str]) -> str:
    """The --alluredir the run ends with (the last one given wins over the ini's addopts)."""
    given = [a.split("=", 1)[1] for a in cmd if a.startswith("--alluredir=")]
    assert given, cmd
    return given[-1]


def test_a_run_writes_allure_results_only_when_asked(tmp_path: Path):
    ini = (REPO / "pyproject.toml").read_text()
    addopts = next(line for line in ini.splitlines() if line.startswith("addopts"))
    assert any(a.startswith("--alluredir=") for a in shlex.split(addopts.split("=", 1)[1].strip().strip('"'))), addopts
    assert _alluredir(suite_command(tmp_path, ("-m", "platform"), allure=False)) == ""
    assert _alluredir(suite_command(tmp_path, ("-m", "platform"), allure=True)) == str(tmp_path / "allure")
    cmd = suite_command(tmp_path, ("-m", "platform"), allure=False)
    assert f"--junitxml={tmp_path / 'junit.xml'}" in cmd and f"--verdict-file={tmp_path / 'verdict.json'}" in cmd, cmd
