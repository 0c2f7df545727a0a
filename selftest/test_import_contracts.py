"""The floor plan (docs/DEVELOPING.md) is enforced: import-linter's contracts in pyproject.toml
([tool.importlinter]) hold for every import, direct or through other modules; each contract
breaks on the import it exists to refuse; and the product loads the sim only to build it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .harness import REPO

pytestmark = pytest.mark.suite


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    lint = shutil.which("lint-imports")
    assert lint, "import-linter is not installed: bash scripts/setup.sh installs the [selftest] extra"
    # this tree's rackgate, whatever is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([lint, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_import_contracts_hold() -> None:
    proc = _lint(REPO)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout, proc.stdout[-2000:]


# (file, the line added to it, the contract that must break): one upward or forbidden import each
VIOLATIONS = [
    ("rackgate/atom/logformat.py", "from ..gsm8k import task", "layers", None),
    ("rackgate/gates/plat.py", "import subprocess", "judgments do no I/O", None),
    # every probe is a declaration's, so a gate imports it: the gates' contract breaks with it
    ("rackgate/probes/bench_run.py", "from ..transport import Host", "probes reach nodes only through rackgate.access",
     "judgments do no I/O"),
    ("rackgate/report/plots.py", "from ..sim import state", "the product does not import the sim", None),
    ("rackgate/sim/launch.py", "from ..probes import docker", "the sim shows real formats on its own", None),
]


def _contracts() -> list[dict[str, object]]:
    import tomllib
    got: list[dict[str, object]] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return got


def test_no_contract_ignores_an_import() -> None:
    """The floor plan holds as written: no contract keeps an ignore list (issue 35)."""
    assert [c["id"] for c in _contracts() if c.get("ignore_imports")] == []


def test_the_sim_contract_holds_every_module_but_simrack() -> None:
    """product-without-sim names its sources one by one (so that rackgate.simrack, the one way into
    the sim, needs no ignored import): every top-level module of rackgate/ but the sim and simrack."""
    (sim,) = [c for c in _contracts() if c["id"] == "product-without-sim"]
    modules = {f"rackgate.{p.name.removesuffix('.py')}" for p in (REPO / "rackgate").iterdir()
               if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__init__.py"}
    assert set(sim["source_modules"]) == modules - {"rackgate.sim", "rackgate.simrack"}  # type: ignore[arg-type]


@pytest.mark.parametrize("path,line,contract,also", VIOLATIONS, ids=[v[2].split(":")[0] for v in VIOLATIONS])
def test_each_contract_refuses_its_import(tmp_path: Path, path: str, line: str, contract: str, also: str | None) -> None:
    """A copy of the package with one forbidden import added: lint-imports fails on that contract
    (and on `also`, the one other contract the import necessarily breaks, none else)."""
    shutil.copytree(REPO / "rackgate", tmp_path / "rackgate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / path).open("a") as f:
        f.write(f"\n{line}  # noqa\n")
    proc = _lint(tmp_path)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert f"{2 if also else 1} broken" in proc.stdout, proc.stdout[-3000:]
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken and (also is None or also in broken), proc.stdout[-3000:]


def test_the_product_loads_the_sim_only_to_build_it() -> None:
    """Every module of the product and of the fixtures imported, a real rack's fault check done: the
    sim is not loaded (rackgate/simrack.py imports it inside its functions only)."""
    code = (
        "import importlib, pathlib, sys\n"
        "for p in sorted([*pathlib.Path('rackgate').rglob('*.py'), *pathlib.Path('fixtures').glob('*.py')]):\n"
        "    if p.parts[1] not in ('sim', 'checks') and p.name != '__main__.py':\n"
        "        importlib.import_module('.'.join(p.with_suffix('').parts).removesuffix('.__init__'))\n"
        "import rackgate.simrack\n"
        "rackgate.simrack.check_faults([])\n"
        "print(sorted(m for m in sys.modules if m == 'rackgate.sim' or m.startswith('rackgate.sim.')))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", proc.stdout
