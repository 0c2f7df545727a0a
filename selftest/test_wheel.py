"""rackgate is a package (issue 26.5): a wheel built from this tree, installed into a fresh venv
(its dependencies come from the environment running the self-tests -- a user's venv or this
machine's site -- through a .pth file, nothing is downloaded), runs the suite from a directory that is not the checkout -- the `rackgate` command,
plain `pytest -p rackgate`, and `--rack FILE` in the space form -- with the checks, the sim's rack
file and the report schema from the installed package and reports/ in that directory."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rackgate.ids import is_row_id

from .harness import parse_junit

pytestmark = pytest.mark.suite

LONG = 600   # a bound, never a speed figure: a suite run on a busy 2-core machine


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = LONG) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _said(p: subprocess.CompletedProcess[str]) -> str:
    return f"rc {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"


@pytest.fixture
def venv(wheel_install) -> dict:
    """The wheel built from a copy of the tree, installed into a fresh venv (selftest/wheel_venv.py;
    the session's one, selftest/conftest.py wheel_install)."""
    return wheel_install


def _verdict(run_dir: Path) -> dict:
    return json.loads((run_dir / "reports" / "verdict.json").read_text())


def _platform_ran_and_passed(run_dir: Path, p: subprocess.CompletedProcess[str]) -> dict:
    """reports/ in the run's directory: JUnit with the PLAT checks, none failed; the ids."""
    outcomes = parse_junit(run_dir / "reports" / "junit.xml")
    ran = {k: o.status for k, o in outcomes.items()}
    assert any("PLAT-DRIVER::node1" in k for k in ran), (sorted(ran)[:10], _said(p))
    assert {s for s in ran.values()} <= {"passed", "skipped"} and "passed" in ran.values(), (ran, _said(p))
    return ran


def test_the_rackgate_command_from_another_directory(venv, tmp_path):
    """`rackgate -m platform` in an empty directory: the checks come from the installed package,
    the sim rack from its package data; exit 0, reports/ (JUnit, Allure, verdict PASS) here."""
    p = _run([venv["rackgate"], "-m", "platform", "-p", "no:cacheprovider"], tmp_path, venv["env"])
    assert p.returncode == 0, _said(p)
    ran = _platform_ran_and_passed(tmp_path, p)
    assert all(is_row_id(k) and "::" in k for k in ran), sorted(ran)[:5]  # the ids a checkout run gives (ROW::place, rackgate/ids.py)
    assert str(venv["package"] / "sim" / "racks" / "sim.toml") in p.stdout, _said(p)   # the header names the rack
    assert _verdict(tmp_path)["verdict"] == "PASS"
    assert any((tmp_path / "reports" / "allure-results").iterdir())
    assert "Module already imported" not in p.stdout + p.stderr, _said(p)


def test_plain_pytest_with_the_plugin_from_another_directory(venv, tmp_path):
    """`pytest -p rackgate -m platform`, no ini anywhere: the plugin collects the package's checks
    and stands in for the ini (the markers that select, reports/ here)."""
    p = _run([venv["python"], "-m", "pytest", "-p", "rackgate", "-m", "platform", "-p", "no:cacheprovider"],
             tmp_path, venv["env"])
    assert p.returncode == 0, _said(p)
    _platform_ran_and_passed(tmp_path, p)
    assert _verdict(tmp_path)["verdict"] == "PASS"



def test_rack_file_in_the_space_form_from_another_directory(venv, tmp_path):
    """`pytest -p rackgate --rack /abs/rack.toml ...` (a separate value, which pytest's first look
    takes for a test path): the rack file is the rack, its fault is found on its node, and
    reports/verdict.json lands in the directory the run started in."""
    racks = tmp_path / "racks"
    racks.mkdir()
    shutil.copy(venv["package"] / "sim" / "racks" / "sim.toml", racks / "mine.toml")
    run = tmp_path / "run"
    run.mkdir()
    p = _run([venv["python"], "-m", "pytest", "-p", "rackgate", "--rack", str(racks / "mine.toml"), "--sim-fault",
              "params-default@node2", "-m", "platform", "-k", "PLAT-PARAMS", "-p", "no:cacheprovider"],
             run, venv["env"])
    assert p.returncode == 1, _said(p)
    assert f"rack file {racks / 'mine.toml'}" in p.stdout, _said(p)
    v = _verdict(run)
    assert v["verdict"] == "FAIL" and {n["node"]: n["verdict"] for n in v["nodes"]} == {
        "node1": "PASS", "node2": "FAIL", "node3": "PASS", "node4": "PASS"}, v
    assert not (racks / "reports").exists()
