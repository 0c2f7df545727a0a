"""What the self-tests import is declared: pyproject.toml's dependencies plus its [selftest] extra
(scripts/setup.sh installs `-e ".[selftest]"`), so a fresh machine set up by setup.sh runs them
all. Read from the self-tests' own source (ast), never from what this machine happens to have."""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from .harness import REPO

pytestmark = pytest.mark.unit

FIRST_PARTY = {"rackgate", "selftest"}
# Imported by self-test code that runs in another Python, or installed by setup.sh on its own:
# module -> (where the import may be, what installs it there).
ELSEWHERE = {
    "torch": ({"selftest/realengine/model_store.py", "selftest/fabric/test_collective_probe.py"},
              "scripts/setup.sh installs CPU torch on its own (the +cpu pin); the real engine's venv has its own"),
    "transformers": ({"selftest/realengine/model_store.py"}, "the real engine's venv (scripts/real_engine/install.sh)"),
}
# Executables the self-tests run, and the distribution that brings each.
RUNS = {"ruff": "ruff", "lint-imports": "import-linter", "mypy": "mypy"}


def imports(root: Path) -> dict[str, set[str]]:
    """Top-level modules imported anywhere under root (absolute imports) -> the files importing them."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(rel)
    return found


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(pyproject: Path) -> set[str]:
    """Distribution names of the core dependencies and the [selftest] extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    reqs = [*project["dependencies"], *project.get("optional-dependencies", {}).get("selftest", [])]
    return {_norm(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in reqs}


def undeclared(found: dict[str, set[str]], names: set[str]) -> list[str]:
    """Imports no declared distribution provides: 'module (files)'. A module maps to its
    distribution through the installed metadata where it is installed, else to its own name."""
    dists = metadata.packages_distributions()
    missing = []
    for mod, files in sorted(found.items()):
        if mod in sys.stdlib_module_names or mod in FIRST_PARTY or mod == "__future__":
            continue
        if mod in ELSEWHERE and files <= ELSEWHERE[mod][0]:
            continue
        if not {_norm(d) for d in dists.get(mod, [mod])} & names:
            missing.append(f"{mod} ({', '.join(sorted(files))})")
    return missing


def test_every_self_test_import_is_declared():
    missing = undeclared(imports(REPO / "selftest"), declared(REPO / "pyproject.toml"))
    assert not missing, ("imported by the self-tests, declared neither in [project] dependencies nor in the "
                         f"[selftest] extra of pyproject.toml: {missing}")


def test_the_tools_the_self_tests_run_are_declared():
    names = declared(REPO / "pyproject.toml")
    assert {_norm(d) for d in RUNS.values()} <= names, RUNS


def test_setup_installs_the_extra():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert re.search(r'pip install .*-e "\.\[selftest\]"', setup), "scripts/setup.sh does not install .[selftest]"
    assert "torch==" in setup and "+cpu" in setup, ELSEWHERE["torch"][1]


def test_an_undeclared_import_is_named(tmp_path):
    """The check itself: a self-test importing a distribution nobody declared is reported, with its file."""
    (tmp_path / "selftest").mkdir()
    (tmp_path / "selftest" / "test_x.py").write_text(
        "import json\nimport pytest\nfrom hypothesis import given\nfrom rackgate import errors\nfrom . import harness\n")
    found = imports(tmp_path / "selftest")
    assert undeclared(found, {"pytest"}) == ["hypothesis (selftest/test_x.py)"]
    assert undeclared(found, {"pytest", "hypothesis"}) == []
    (tmp_path / "selftest" / "test_y.py").write_text("import torch\n")  # outside the places torch may be
    assert undeclared(imports(tmp_path / "selftest"), {"pytest", "hypothesis"}) == ["torch (selftest/test_y.py)"]
