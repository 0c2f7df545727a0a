"""The plugin (rackgate/pytest_plugin.py) and the `rackgate` command without a re-run: option forms
normalised by the command, the suite's defaults only where the user gave none, the checks
collected from the package only when no test path is given, reports/ relative to the directory
the run starts in."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rackgate import pytest_plugin
from rackgate.ids import is_row_id

from .harness import REPO, SUITE_PLUGINS, user_env

pytestmark = pytest.mark.suite


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**user_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *SUITE_PLUGINS, *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def test_outside_the_checkout_the_checks_are_collected_and_the_users_options_win(tmp_path):
    p = _pytest(tmp_path, "--co", "-q", "-m", "platform", "--junitxml=mine.xml", "--verdict-file=")
    ids = [x for x in p.stdout.splitlines() if "::" in x]
    assert p.returncode == 0 and ids, p.stdout[-2000:] + p.stderr[-2000:]
    assert all(is_row_id(i) and "::" in i for i in ids), ids[:5]   # the same ids as in the checkout (ROW::place)
    assert (tmp_path / "mine.xml").is_file() and not (tmp_path / "reports" / "junit.xml").exists()
    assert (tmp_path / "reports" / "allure-results").is_dir()   # the default the user did not override


def test_a_test_path_given_is_all_that_runs(tmp_path):
    """A path outside the checks (a user's own test file): the plugin adds neither the checks nor
    the suite's defaults (no reports/ written for it)."""
    (tmp_path / "test_mine.py").write_text("def test_one():\n    pass\n")
    p = _pytest(tmp_path, "-q", "test_mine.py", "--verdict-file=")
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
    assert not (tmp_path / "reports").exists()


def test_a_separate_value_that_moved_the_rootdir_is_named(tmp_path):
    """`--rack /elsewhere/rack.toml` from the checkout: pytest's first parse takes the value for a
    test path and settles the rootdir there (or, for a checkout under /tmp, at /tmp: above the
    checkout's ini); the run is the same, and a warning names the option. `--rack=...` keeps the
    rootdir and says nothing. Wherever the checkout lives (proven from a clone under /tmp)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(REPO / "rackgate/sim/racks/sim.toml", elsewhere / "rack.toml")
    space = _pytest(REPO, "--co", "-q", "-m", "platform", "--rack", str(elsewhere / "rack.toml"), "--verdict-file=")
    joined = _pytest(REPO, "--co", "-q", "-m", "platform", f"--rack={elsewhere / 'rack.toml'}", "--verdict-file=")
    assert space.returncode == joined.returncode == 0, space.stdout[-2000:] + joined.stdout[-2000:]
    assert f"taking --rack {elsewhere / 'rack.toml'} for a test path" in space.stdout, space.stdout[-2000:]
    assert "for a test path" not in joined.stdout
    ids = {i for i in joined.stdout.splitlines() if "::" in i}
    assert ids and {i for i in space.stdout.splitlines() if "::" in i} == ids   # the same ids (rackgate/ids.py)
    assert not pytest_plugin.taken_for_paths(["--rack", "no-such.toml", "-m", "x", "--record-baseline", "."], tmp_path)


def test_the_command_runs_the_checks_where_an_ini_names_other_testpaths(tmp_path):
    """In another project's folder (its own testpaths): plain pytest runs that project's tests,
    the `rackgate` command rackgate's checks."""
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["mine"]\n')
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "test_own.py").write_text("def test_own():\n    pass\n")
    env = {**user_env(), "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    args = ["--co", "-q", "-p", "no:cacheprovider", "-m", "platform or not platform", "--verdict-file="]
    own = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300, stdin=subprocess.DEVNULL)
    ours = subprocess.run([sys.executable, "-m", "rackgate.cli", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert [i for i in own.stdout.splitlines() if "::" in i] == ["mine/test_own.py::test_own"], own.stdout[-2000:]
    ids = [i for i in ours.stdout.splitlines() if "::" in i]
    assert ours.returncode == 0 and ids and all("test_own" not in i for i in ids), ours.stdout[-2000:] + ours.stderr[-2000:]
    assert any(i.endswith("PLAT-DRIVER::node1") for i in ids), ids[:5]
