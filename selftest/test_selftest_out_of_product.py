"""The product holds no self-test knowledge (issue 35): fault injection is a self-test plugin
(selftest/inject.py) that wraps runners through the transport's generic hook point
(rackgate.transport.wrap_runners); no module of rackgate/ reads RACKGATE_INJECT or names the
selftest/ directory in its code."""
import ast
from pathlib import Path

import pytest

from rackgate import config
from rackgate.transport import LocalRunner, host_for, wrap_runners

from .inject import FailingRunner

pytestmark = pytest.mark.unit
PRODUCT = Path(__file__).resolve().parents[1] / "rackgate"
RACK = """
name = "r"
[[nodes]]
name = "n1"
transport = "local"
data_ip = "127.0.0.1"
tray = 1
"""


def _code_strings(path: Path) -> list[str]:
    """The string constants of a module, docstrings left out (a docstring may point at a self-test)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_product_module_reads_the_injection_plan_or_names_the_selftests():
    bad = []
    for path in sorted(PRODUCT.rglob("*.py")):
        for s in _code_strings(path):
            if "RACKGATE_INJECT" in s or s == "selftest" or s.startswith("selftest/"):
                bad.append(f"{path.relative_to(PRODUCT.parent)}: {s!r}")
    assert not bad, bad


def test_a_runner_wrapper_wraps_the_hosts_made_while_it_is_registered(tmp_path):
    rack = config.parse(RACK, "r.toml")
    plan = {"log": str(tmp_path / "sent.jsonl"), "fail": {"n1": {"uname": "missing"}}}
    undo = wrap_runners(lambda runner: FailingRunner(runner, plan))
    try:
        host = host_for(rack.nodes[0], rack)
        assert isinstance(host.runner, FailingRunner) and isinstance(host.runner.below, LocalRunner)
        assert host.run(["uname"], timeout=10).rc == 127
    finally:
        undo()
    assert isinstance(host_for(rack.nodes[0], rack).runner, LocalRunner)
