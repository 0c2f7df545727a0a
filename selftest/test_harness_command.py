"""The self-tests' suite-run command line (selftest/harness.py suite_command): a run writes its Allure
results only when the self-test asks for them -- the checkout's ini names reports/allure-results, so a
run that asks none must say so, or every self-test's run would write its results (and the run-level
plots, ~0.75 CPU s a platform run) into the checkout's reports/."""
import shlex
from pathlib import Path

import pytest

from .harness import REPO, suite_command, suite_env

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


def test_a_suite_run_writes_and_reuses_bytecode_and_loads_only_its_plugins(monkeypatch):
    """PYTHONDONTWRITEBYTECODE (set on this machine) would compile every module of rackgate in every
    suite run; the suite's environment drops it and keeps the bytecode outside the checkout
    (PYTHONPYCACHEPREFIX; a caller's env may set it back)."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    env = suite_env()
    assert "PYTHONDONTWRITEBYTECODE" not in env and "PYTEST_XDIST_WORKER" not in env, sorted(env)
    assert env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert env["PYTHONPYCACHEPREFIX"] and not env["PYTHONPYCACHEPREFIX"].startswith(str(Path(__file__).parents[1]))
    assert suite_env({"PYTHONDONTWRITEBYTECODE": "1"})["PYTHONDONTWRITEBYTECODE"] == "1"
