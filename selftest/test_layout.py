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

