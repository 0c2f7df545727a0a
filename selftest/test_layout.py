"""The README's layout section names every package in the tree (so the map stays true)."""
import re

from .harness import REPO


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


def _imports(path) -> set[str]:
    """The absolute module names a file imports (relative imports resolved against rackgate/)."""
    import ast
    tree = ast.parse(path.read_text())
    pkg = path.relative_to(REPO).with_suffix("").parts[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(pkg[:len(pkg) - node.level + 1]) if node.level else []
            mod = ".".join([*base, *(node.module or "").split(".")]).strip(".")
            out |= {mod} | {f"{mod}.{a.name}" for a in node.names}
    return out


def test_judgments_do_no_io():
    """The floor plan (docs/DEVELOPING.md): a judgment in rackgate/gates/ is a pure function over
    typed facts; it never reaches a node, a server or a process (no transport, no subprocess, no
    HTTP client)."""
    io = ("rackgate.transport", "subprocess", "socket", "requests", "rackgate.atom.client", "http.client")
    bad = {f"{p.relative_to(REPO)}: {m}" for p in (REPO / "rackgate/gates").glob("*.py")
           for m in _imports(p) if m.startswith(io)}
    assert not bad, "judgments importing I/O:\n  " + "\n  ".join(sorted(bad))
