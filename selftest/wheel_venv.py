"""A wheel built from this tree, installed into a fresh venv (`--system-site-packages`: the
dependencies come from this machine's site, nothing is downloaded): its python, its `rackgate`
command, its package folder and an environment without the checkout on it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from .harness import REPO, user_env

LONG = 600   # a bound, never a speed figure: pip on a busy 2-core machine


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=LONG, stdin=subprocess.DEVNULL)


def _said(p: subprocess.CompletedProcess[str]) -> str:
    return f"{' '.join(map(str, p.args))}: rc {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"


def build(d: Path) -> dict:
    """Build the wheel under d and install it into d/venv; AssertionError naming the step that failed."""
    src = d / "src"
    src.mkdir()
    shutil.copytree(REPO / "rackgate", src / "rackgate", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    env = {k: v for k, v in user_env().items() if k not in ("PYTHONPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")}
    steps = [[sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
              "-w", str(d / "dist"), str(src)],
             [sys.executable, "-m", "venv", "--system-site-packages", str(d / "venv")]]
    for step in steps:
        p = _run(step, d, env)
        assert p.returncode == 0, _said(p)
    python = d / "venv" / "bin" / "python"
    wheel = next((d / "dist").glob("rackgate-*.whl"))
    p = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], d, env)
    assert p.returncode == 0, _said(p)
    where = _run([str(python), "-c", "import rackgate; print(rackgate.__file__)"], d, env)
    package = Path(where.stdout.strip()).parent
    assert where.returncode == 0 and package.is_relative_to(d / "venv"), _said(where)   # the venv's copy, not the checkout
    return {"python": str(python), "rackgate": str(d / "venv" / "bin" / "rackgate"), "package": package, "env": env}
