"""The same verdict however the command is typed (issue 39): the rows are the pairwise cover
(selftest/typed.py) of launcher x option form x path form x directory -- `rackgate` and `python3 -m
pytest` from the checkout, `rackgate` and `python -m pytest -p rackgate` from a wheel install; `--opt value` / `--opt=value`; relative / absolute paths; run from the checkout, its
parent or an unrelated directory. In every row a healthy sim run (recording a baseline), a run
with a fault and the regression round trip (`-m regression` against that baseline) give the same
verdict.json per row and item as every other row, and the round trip is clean."""
from __future__ import annotations

import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from . import typed
from .harness import REPO

pytestmark = pytest.mark.suite

SELECT = ["-m", "platform", "-k", "test_plat_driver or test_plat_atom_commit"]  # PLAT-ATOM-COMMIT records a fact
FAULT = "driver-not-loaded@node2"
DIMS = {"launcher": ["rackgate", "python -m pytest", "wheel rackgate", "wheel pytest -p rackgate"],
        "form": ["--opt value", "--opt=value"],
        "paths": ["relative", "absolute"],
        "cwd": ["checkout", "its parent", "elsewhere"]}


def _allowed(row: typed.Row) -> bool:
    # From the checkout, `python -m` puts the checkout first on sys.path: a wheel run there is no wheel run.
    return not (row["launcher"].startswith("wheel") and row["cwd"] == "checkout")


ROWS = typed.pairwise(DIMS, _allowed)


@pytest.fixture
def wheel(wheel_install):
    return wheel_install   # the session's one (selftest/conftest.py), shared with test_wheel.py


def _launcher(row: typed.Row, wheel_of) -> tuple[list[str], dict[str, str] | None]:
    """argv prefix and environment (None: the checkout's rackgate first on PYTHONPATH)."""
    kind = row["launcher"]
    if kind == "rackgate":
        return [sys.executable, "-m", "rackgate.cli"], None    # the `rackgate` script's code, this checkout's
    if kind == "python -m pytest":
        return [sys.executable, "-m", "pytest"], None
    w = wheel_of()
    return {"wheel rackgate": [w["rackgate"]],
            "wheel pytest -p rackgate": [w["python"], "-m", "pytest", "-p", "rackgate"]}[kind], w["env"]


def _typed(row: typed.Row, cwd: Path, opts: list[tuple[str, str | Path]]) -> list[str]:
    out: list[str] = []
    for name, value in opts:
        if isinstance(value, Path):
            value = os.path.relpath(value, cwd) if row["paths"] == "relative" else str(value)
        out += [name, value] if row["form"] == "--opt value" else [f"{name}={value}"]
    return out


def _one_row(i: int, row: typed.Row, tmp: Path, wheel_of) -> dict:
    """The three runs of one row; their verdicts (typed.verdict) and what each printed."""
    d = tmp / f"row{i}"
    for sub in ("racks", "base", "out", "elsewhere"):
        (d / sub).mkdir(parents=True)
    rack, base = d / "racks" / "rack.toml", d / "base" / "base.json"
    shutil.copy(REPO / "rackgate/sim/racks/sim.toml", rack)
    cwd = {"checkout": REPO, "its parent": REPO.parent, "elsewhere": d / "elsewhere"}[row["cwd"]]
    argv0, env = _launcher(row, wheel_of)
    runs = {"healthy": [*SELECT, "--record-baseline"], "fault": [*SELECT], "regression": ["-m", "regression"]}
    got = {}
    for name, args in runs.items():
        opts: list[tuple[str, str | Path]] = [("--rack", rack)]
        opts += [("--sim-fault", FAULT)] if name == "fault" else [("--baseline", base)]
        opts += [("--verdict-file", d / "out" / f"{name}.json"), ("--junitxml", d / "out" / f"{name}.xml"),
                 ("--alluredir", d / "out" / f"allure-{name}")]
        argv = [*argv0, "-p", "no:cacheprovider", "-q", *args, *_typed(row, cwd, opts)]
        p = (typed.run(argv, cwd) if env is None else
             typed.subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                                  stdin=typed.subprocess.DEVNULL))
        said = f"{row} {name}: {' '.join(argv)}\nrc {p.returncode}\n{p.stdout[-2500:]}\n{p.stderr[-1500:]}"
        assert (d / "out" / f"{name}.json").is_file(), said
        got[name] = (typed.verdict(d / "out" / f"{name}.json"), p.returncode, p.stdout, said)
    return got


@pytest.mark.timeout(1800)   # a bound: 30 suite runs on a busy 2-core machine
def test_every_typed_form_gives_the_same_verdicts(tmp_path, request):
    cache: dict = {}

    def wheel_of():
        if "w" not in cache:
            cache["w"] = request.getfixturevalue("wheel")
        return cache["w"]
    if any(r["launcher"].startswith("wheel") for r in ROWS):
        wheel_of()   # built once, before the rows run side by side
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda ir: _one_row(ir[0], ir[1], tmp_path, wheel_of), enumerate(ROWS)))
    first = results[0]
    healthy, fault, regression = (first[k][0] for k in ("healthy", "fault", "regression"))
    # the verdicts compared are about something: health passes, the fault is found on its node
    assert healthy["verdict"] == "PASS" and healthy["items"], first["healthy"][3]
    assert fault["verdict"] == "FAIL" and [n for n, (v, _, _) in fault["nodes"].items() if v == "FAIL"] == ["node2"], first["fault"][3]
    assert regression["verdict"] == "PASS" and any("atom_commit" in t for t in regression["items"]), first["regression"][3]
    for got in results:
        for name, (v, rc, _, said) in got.items():
            assert v == first[name][0], said
            assert rc == {"fault": 1}.get(name, 0), said
        out, said = got["regression"][2], got["regression"][3]
        assert "facts within tolerance" in out and "REGRESSED" not in out and "missing" not in out, said
