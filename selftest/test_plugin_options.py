"""The plugin's options without a pytest run: the command's --opt=value form, the verdict file's
place, the defaults (the runs: test_pytest_plugin.py)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from rackgate import cli, pytest_plugin

pytestmark = pytest.mark.unit


def test_the_command_writes_rackgate_options_with_their_values(tmp_path):
    got = cli.normalize(["--rack", "r.toml", "--sim-fault", "stuck-link@node2:1", "--served-model", "models/x",
                         "--atom-url", "http://h:8000", "-m", "gate", "--junitxml", "j.xml", "--verdict-file=v.json",
                         "--record-baseline", "rackgate/checks/declared.py"], tmp_path)
    assert got == [f"--rack={tmp_path / 'r.toml'}", "--sim-fault=stuck-link@node2:1", "--served-model=models/x",
                   "--atom-url=http://h:8000", "-m", "gate", f"--junitxml={tmp_path / 'j.xml'}",
                   f"--verdict-file={tmp_path / 'v.json'}", "--record-baseline", "rackgate/checks/declared.py"]
    with pytest.raises(SystemExit, match="--rack needs a value"):
        cli.normalize(["-m", "gate", "--rack"], tmp_path)


def test_the_verdict_file_is_relative_to_where_the_run_starts(tmp_path):
    assert cli._verdict_path(["-m", "gate"], tmp_path) == tmp_path / "reports" / "verdict.json"
    assert cli._verdict_path(["--verdict-file=a.json", "--verdict-file=/x/b.json"], tmp_path) == Path("/x/b.json")
    assert cli._verdict_path(["--verdict-file="], tmp_path) is None


class _Config:
    def __init__(self, ini: dict[str, str]):
        self.ini = ini

    def getini(self, name: str) -> str:
        return self.ini.get(name, "")


def test_defaults_only_where_none_was_given():
    bare = SimpleNamespace(reportchars="fE", strict_markers=False, xmlpath=None, allure_report_dir=None, timeout=None)
    assert pytest_plugin.defaults(bare, _Config({})) == [
        "-ra", "--strict-markers", "--junitxml=reports/junit.xml", "--alluredir=reports/allure-results", "--timeout=300"]
    given = SimpleNamespace(reportchars="fEs", strict_markers=True, xmlpath="mine.xml", allure_report_dir="al", timeout=None)
    assert pytest_plugin.defaults(given, _Config({"timeout": "60"})) == []
    no_allure = SimpleNamespace(reportchars="a", strict_markers=True, xmlpath="j", timeout=5)   # plugin not loaded
    assert pytest_plugin.defaults(no_allure, _Config({})) == []


def test_a_rootdir_above_the_checkouts_own_ini_moved(tmp_path):
    """A checkout under /tmp, the taken value under /tmp too: pytest settles on the common folder
    (tmp_path here), above the checkout's pyproject.toml -- moved, as a rootdir elsewhere is; a run
    from a plain sub-folder of a project whose rootdir is the project's is not."""
    checkout, elsewhere, sub = tmp_path / "clone", tmp_path / "elsewhere", tmp_path / "clone" / "docs"
    sub.mkdir(parents=True)
    elsewhere.mkdir()
    (checkout / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    assert pytest_plugin.rootdir_moved(checkout, tmp_path)
    assert pytest_plugin.rootdir_moved(checkout, elsewhere)
    assert not pytest_plugin.rootdir_moved(checkout, checkout)
    assert not pytest_plugin.rootdir_moved(sub, checkout)
    assert not pytest_plugin.rootdir_moved(tmp_path / "elsewhere", tmp_path)   # no project file between
