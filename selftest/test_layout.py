"""The README's layout section names every package in the tree (so the map stays true)."""
import re

from .harness import REPO


def test_readme_layout_lists_every_package():
    text = (REPO / "README.md").read_text()
    layout = text[text.index("## Layout"):]
    listed = set(re.findall(r"^(rackgate/[\w.]+)", layout, re.M))
    packages = {f"rackgate/{p.parent.name}" for p in (REPO / "rackgate").glob("*/__init__.py")}
    assert not packages - listed, f"README layout omits {sorted(packages - listed)}"
