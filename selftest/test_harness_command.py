"""The self-tests' suite-run command line (selftest/harness.py suite_command): a run writes its Allure
results only when the self-test asks for them -- the checkout's ini names reports/allure-results, so a
run that asks none must say so, or every self-test's run would write its results (and the run-level
plots, ~0.75 CPU s a platform run) into the checkout's reports/."""
import os
import shlex
from collections.abc import Mapping
from pathlib import Path

import pytest

from rackgate.transport.runners import LocalRunner, environ_copy

from . import bytecode, harness
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


def test_the_self_test_process_keeps_its_own_bytecode_outside_the_checkout(monkeypatch):
    """The xdist workers and the quick tier's run (bytecode.keep_bytecode, from selftest/conftest.py):
    where the user writes no bytecode, their modules are compiled once into PYCACHE (outside the
    checkout) and read back by the next process; the environment the tests' processes get is the user's."""
    import sys
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    bytecode.keep_bytecode()
    assert sys.pycache_prefix == str(bytecode.PYCACHE) and not sys.dont_write_bytecode
    assert not str(bytecode.PYCACHE).startswith(str(REPO)) and os.environ["PYTHONDONTWRITEBYTECODE"] == "1"
    monkeypatch.setattr(sys, "pycache_prefix", "/elsewhere")  # the user's own prefix is kept
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    bytecode.keep_bytecode()
    assert sys.pycache_prefix == "/elsewhere"


class _RacedEnviron(Mapping):
    """os.environ as another thread leaves it mid-copy: PYTEST_CURRENT_TEST is listed, then gone
    by the time it is read (the first `misses` copies), as pytest's thread unsets it between tests."""

    def __init__(self, data: dict[str, str], misses: int):
        self.data, self.misses = data, misses

    def __iter__(self):
        return iter([*self.data, "PYTEST_CURRENT_TEST"])

    def __len__(self):
        return len(self.data) + 1

    def __getitem__(self, key):
        if key == "PYTEST_CURRENT_TEST":
            self.misses -= 1
            if self.misses >= 0:
                raise KeyError(key)
            return "selftest/x.py::t (call)"
        return self.data[key]


def test_the_environment_is_copied_while_another_thread_unsets_a_variable(monkeypatch):
    """A matrix pool thread copies the environment for a suite run (or a sim node's liveness poll
    for its command) while pytest's own thread unsets PYTEST_CURRENT_TEST: the copy is taken again,
    never a KeyError out of the self-test or the check (rackgate.transport.runners.environ_copy)."""
    with monkeypatch.context() as m:  # os.environ back before pytest's own thread writes to it again
        m.setattr(os, "environ", _RacedEnviron({"PATH": "/usr/bin", "HOME": "/root"}, misses=3))
        env = harness.user_env()
        assert env["PATH"] == "/usr/bin" and "PYTEST_CURRENT_TEST" not in env
        assert os.environ.misses < 0  # type: ignore[attr-defined]  # met three times, copied past
        # the same for a sim node's commands (a boot watch's liveness polls run beside the tests)
        m.setattr(os, "environ", _RacedEnviron({"PATH": "/usr/bin"}, misses=2))
        assert LocalRunner("node1", {"RACKGATE_SIM_NODE": "/x"}).literal_env() == {
            "PATH": "/usr/bin", "PYTEST_CURRENT_TEST": "selftest/x.py::t (call)", "RACKGATE_SIM_NODE": "/x"}
        m.setattr(os, "environ", _RacedEnviron({"PATH": "/usr/bin"}, misses=10**6))
        with pytest.raises(KeyError):  # bounded: an environment that never copies is an error, not a hang
            environ_copy(tries=5)
