"""No command text built from values reaches a node: every Host.run / spawn / argv call gets an
argv, and a Host.shell script is fixed text with its values as positional arguments. An AST scan
of the suite's code (rackgate/, checks and fixtures included) refuses f-strings, `%`, `+` and `.format()`
in a command position."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent
SCANNED = ("rackgate",)
COMMANDS = {"run", "spawn", "argv", "shell"}  # Host methods whose first argument is a command


def _fixed(node: ast.expr) -> bool:
    """Text known when the code is written: literals and module constants (UPPER_CASE names)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _fixed(node.left) and _fixed(node.right)
    return isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id.lstrip("_").isupper())


def _built(node: ast.expr) -> bool:
    """An expression that builds text from values at run time."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return not (_fixed(node.left) and _fixed(node.right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("format", "join", "replace") and isinstance(node.func.value, ast.Constant)
    return False


def _script_of(call: ast.Call) -> ast.expr | None:
    """The command text in a call: shell's script, or the SCRIPT in an argv `["sh", "-c", SCRIPT, ...]`."""
    first = call.args[0]
    if call.func.attr == "shell":
        return first
    if isinstance(first, ast.List | ast.Tuple) and len(first.elts) >= 3:
        head = [e.value if isinstance(e, ast.Constant) else None for e in first.elts[:2]]
        if head == ["sh", "-c"]:
            return first.elts[2]
    return first if call.func.attr != "argv" else None


def offenders(source: str, where: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in COMMANDS
                and node.args):
            text = _script_of(node)
            if text is not None and _built(text):
                out.append(f"{where}:{node.lineno}: {ast.unparse(node)[:100]}")
    return out


def test_no_command_text_is_built_from_values():
    found = []
    for root in SCANNED:
        for path in sorted((REPO / root).rglob("*.py")):
            found += offenders(path.read_text(), str(path.relative_to(REPO)))
    assert not found, "commands built as text (use an argv, or Host.shell(script, *values)):\n" + "\n".join(found)


def test_the_scan_sees_each_way_of_building_text():
    bad = ['h.run(f"rm -f {p}")', 'h.run("cat " + p)', 'h.run("cat %s" % p)', 'h.run("cat {}".format(p))',
           'h.shell(f"grep {pat} \\"$1\\"", path)', 'h.spawn(["sh", "-c", f"exec {cmd}"], log)',
           'h.run(["sh", "-c", "ls " + d])', 'h.shell(PRE + x)']
    good = ['h.run(["rm", "-f", h.path(p)])', 'h.shell(\'grep -- "$1" "$2"\', pat, path)',
            'h.run(["sh", "-c", SCRIPT, "sh", v])', 'h.run(["find", f"/proc/{pid}/fd"])', 'h.shell(SCRIPT)',
            'h.run(f"constant")', 'h.shell(\'r="$1"; \' + _SCRIPT + "; done")']
    assert [bool(offenders(b, "x")) for b in bad] == [True] * len(bad)
    assert [bool(offenders(g, "x")) for g in good] == [False] * len(good)
