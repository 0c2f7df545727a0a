"""The README's layout section names every package in the tree (so the map stays true). The
import rules of the floor plan are import-linter's contracts: selftest/test_import_contracts.py."""
import re

import pytest

from .harness import REPO

pytestmark = pytest.mark.unit


def test_readme_layout_lists_every_package():
    text = (REPO / "README.md").read_text()
    layout = text[text.index("## Layout"):]
    listed = set(re.findall(r"^(rackgate/[\w.]+)", layout, re.M))
    packages = {f"rackgate/{p.parent.name}" for p in (REPO / "rackgate").glob("*/__init__.py")}
    assert not packages - listed, f"README layout omits {sorted(packages - listed)}"


def test_readme_layout_lists_every_module_and_names_only_what_exists():
    text = (REPO / "README.md").read_text()
    layout = text[text.index("## Layout"):]
    listed = set(re.findall(r"^(rackgate/[\w.]+)", layout, re.M))
    modules = {f"rackgate/{p.name}" for p in (REPO / "rackgate").glob("*.py") if p.name != "__init__.py"}
    assert not modules - listed, f"README layout omits {sorted(modules - listed)}"
    tops = set(re.findall(r"^([\w.]+/)\s", layout, re.M))
    assert not {t for t in listed | tops if not (REPO / t).exists()}, "README layout names what is not in the tree"



def _hook_defs(path) -> list[str]:
    """The `pytest_*` functions a module defines (top-level, or methods of a class it registers)."""
    import ast
    tree = ast.parse(path.read_text(), filename=str(path))
    return [f"{path.relative_to(REPO)}:{n.lineno} {n.name}" for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("pytest_")]


def test_fixtures_hold_no_hooks():
    """Hooks live in the plugin (rackgate/hooks/), fixtures in rackgate/fixtures/: a `def pytest_*`
    under rackgate/fixtures/ is a hook in the wrong place (docs/DEVELOPING.md's layer table)."""
    found = [d for p in sorted((REPO / "rackgate/fixtures").rglob("*.py")) for d in _hook_defs(p)]
    assert not found, f"pytest hooks in rackgate/fixtures/ (move them to rackgate/hooks/): {found}"


def test_every_hooks_and_fixtures_module_is_registered():
    """A module of rackgate/hooks/ or rackgate/fixtures/ that the plugin does not list in
    `pytest_plugins` would hold hooks or fixtures that never run; a listed one must exist."""
    from rackgate import pytest_plugin
    listed = set(pytest_plugin.pytest_plugins)
    present = {f"rackgate.{pkg}.{p.stem}" for pkg in ("hooks", "fixtures")
               for p in (REPO / "rackgate" / pkg).glob("*.py") if p.stem != "__init__"}
    assert not present - listed, f"not in rackgate/pytest_plugin.py's pytest_plugins: {sorted(present - listed)}"
    ours = {m for m in listed if m.startswith(("rackgate.hooks.", "rackgate.fixtures."))}
    assert not ours - present, f"pytest_plugins names modules that do not exist: {sorted(ours - present)}"
    assert _hook_defs(REPO / "rackgate/hooks/outcome.py"), "the AST walk finds no hook where there are hooks"
