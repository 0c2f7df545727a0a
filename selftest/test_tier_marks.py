"""selftest/conftest.py holds every self-test module to exactly one tier, and keeps the `unit`
tier free of processes: a copy of selftest/'s conftest beside test modules that break each rule,
run as a pytest subprocess (the rules' pieces: selftest/test_tiers.py)."""
import os
import shutil
import subprocess
import sys

import pytest

from .harness import REPO, user_env

pytestmark = pytest.mark.suite

UNIT_THAT_STARTS_A_PROCESS = """
import subprocess
import pytest
pytestmark = pytest.mark.unit
def test_quiet():
    assert 1 + 1 == 2
def test_starts_true():
    subprocess.run(["true"])
"""


def _pytest(tmp_path, modules: dict[str, str], *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    pkg = tmp_path / "selftest"
    pkg.mkdir()
    for name in ("__init__.py", "conftest.py", "tiers.py", "gsm8k_data.py", "bytecode.py"):
        shutil.copy(REPO / "selftest" / name, pkg / name)
    for name, text in modules.items():
        (pkg / name).write_text(text)
    env = {**user_env(), "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           **(env or {})}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "selftest", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_module_with_no_tier_or_two_stops_the_run_naming_it(tmp_path):
    run = _pytest(tmp_path, {"test_none.py": "def test_a():\n    pass\n",
                             "test_two.py": "import pytest\npytestmark = [pytest.mark.unit, pytest.mark.suite]\n"
                                            "def test_b():\n    pass\n",
                             "test_one.py": "import pytest\npytestmark = pytest.mark.unit\ndef test_c():\n    pass\n"})
    assert run.returncode != 0, run.stdout
    assert "self-test module selftest.test_none carries no tier mark" in run.stdout, run.stdout
    assert "self-test module selftest.test_two carries 2 tier marks (suite, unit)" in run.stdout, run.stdout
    assert "test_one" not in run.stdout.split("short test summary")[-1]


def test_a_unit_test_that_starts_a_process_fails_naming_itself(tmp_path):
    run = _pytest(tmp_path, {"test_mis_marked.py": UNIT_THAT_STARTS_A_PROCESS}, "-rfE")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 1 passed" in run.stdout, run.stdout
    assert "test_mis_marked.py::test_starts_true is marked `unit` but started a subprocess" in run.stdout, run.stdout


def _logging_module(tier: str, n: int) -> str:
    return (f"import os\nimport pytest\npytestmark = pytest.mark.{tier}\n"
            f"@pytest.mark.parametrize('i', range({n}))\ndef test_logs(request, i):\n"
            "    with open(os.environ['RG_ORDER_LOG'], 'a') as f:\n"
            "        f.write(request.node.module.__name__ + '\\n')\n")


def test_a_long_group_of_one_test_is_handed_out_before_a_module_of_many(tmp_path):
    """Under `-n 1 --dist loadgroup` (one worker: the hand-out order is the run order): a module
    named in selftest/tiers.py LONG, one test, runs before a ten-test unit module and a suite
    module. xdist's own default (groups by number of tests, most first) ran it last."""
    log = tmp_path / "order"
    modules = {"test_many.py": _logging_module("unit", 10), "test_plain.py": _logging_module("suite", 2),
               "test_typed_forms.py": _logging_module("suite", 1)}
    run = _pytest(tmp_path, modules, "-n", "1", "--dist", "loadgroup", "-p", "xdist.plugin",
                  env={"RG_ORDER_LOG": str(log)})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    order = list(dict.fromkeys(log.read_text().split()))
    assert order == ["selftest.test_typed_forms", "selftest.test_plain", "selftest.test_many"], order
