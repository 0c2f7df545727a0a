"""A wheel built from this tree, installed into a fresh venv: its python, its `rackgate` command,
its package folder and an environment without the checkout on it. The venv's dependencies come
from the environment running the self-tests -- a user's venv or this machine's site -- through a
.pth file (`--system-site-packages` would give it the *base* interpreter's site, which lacks what a
user's venv installed); nothing is downloaded. selftest/test_wheel.py and test_typed_forms.py use it."""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

from .harness import REPO, user_env

LONG = 600   # a bound, never a speed figure: pip on a busy 2-core machine


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=LONG, stdin=subprocess.DEVNULL)


def _said(p: subprocess.CompletedProcess[str]) -> str:
    return f"{' '.join(map(str, p.args))}: rc {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"


def running_site_dirs() -> list[str]:
    """The site directories of the environment running the self-tests: a venv's own (and the base
    interpreter's where the venv was made with --system-site-packages), the user site if enabled."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        dirs.append(site.getusersitepackages())
    return dirs


def _see_running_site(venv: Path) -> None:
    """The new venv sees the running environment's packages after its own: one .pth line adding
    each running site directory as a site directory, its own .pth files included."""
    own = next((venv / "lib").glob("python3*/site-packages"))
    line = "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in running_site_dirs())
    (own / "zz_rackgate_selftest_running_site.pth").write_text(line + "\n")


def build(d: Path) -> dict:
    """Build the wheel under d and install it into d/venv; AssertionError naming the step that failed."""
    src = d / "src"
    src.mkdir()
    shutil.copytree(REPO / "rackgate", src / "rackgate", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    env = {k: v for k, v in user_env().items() if k not in ("PYTHONPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")}
    for step in ([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                  "-w", str(d / "dist"), str(src)],
                 [sys.executable, "-m", "venv", str(d / "venv")]):
        p = _run(step, d, env)
        assert p.returncode == 0, _said(p)
    _see_running_site(d / "venv")
    python = d / "venv" / "bin" / "python"
    wheel = next((d / "dist").glob("rackgate-*.whl"))
    p = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], d, env)
    assert p.returncode == 0, _said(p)
    where = _run([str(python), "-c", "import rackgate; print(rackgate.__file__)"], d, env)
    package = Path(where.stdout.strip()).parent
    assert where.returncode == 0 and package.is_relative_to(d / "venv"), _said(where)   # the venv's copy, not the checkout
    # its dependencies are the running environment's (a user's venv), not the base interpreter's
    dep = _run([str(python), "-c", "import allure_pytest; print(allure_pytest.__file__)"], d, env)
    assert dep.returncode == 0 and any(Path(dep.stdout.strip()).is_relative_to(s) for s in running_site_dirs()), \
        (_said(dep), running_site_dirs())
    return {"python": str(python), "rackgate": str(d / "venv" / "bin" / "rackgate"), "package": package, "env": env}
