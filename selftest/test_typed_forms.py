"""The same verdict however the command is typed (issue 39): the rows are the pairwise cover
(selftest/typed.py) of launcher x option form x path form x directory x run -- `rackgate` and `python3 -m
pytest` from the checkout, `rackgate` and `python -m pytest -p rackgate` from a wheel install; `--opt value` /
`--opt=value`; relative / absolute paths; run from the checkout, its parent or an unrelated directory; a
healthy sim run recording a baseline, a run with a fault, or the regression round trip (`-m regression`
against a baseline a healthy row recorded). Every run of a kind gives the same verdict.json per row and
item as every other run of that kind, every healthy row's baseline is where its typed `--baseline` says
with the same facts, and every round trip is clean.

The run is a dimension of the cover (13 runs), not three runs a row (30): each pair of a run and a
launcher, form, path form or directory is still typed, as each pair of the other four is; the
regression rows read back baselines recorded by healthy rows typed another way."""
from __future__ import annotations

import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rackgate import baseline as bl

from . import typed
from .harness import REPO

pytestmark = pytest.mark.suite

SELECT = ["-m", "platform", "-k", "PLAT-DRIVER or PLAT-ATOM-COMMIT"]  # PLAT-ATOM-COMMIT records a fact
FAULT = "driver-not-loaded@node2"
DIMS = {"launcher": ["rackgate", "python -m pytest", "wheel rackgate", "wheel pytest -p rackgate"],
        "form": ["--opt value", "--opt=value"],
        "paths": ["relative", "absolute"],
        "cwd": ["checkout", "its parent", "elsewhere"],
        "run": ["healthy", "fault", "regression"]}


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


def _one_run(i: int, row: typed.Row, tmp: Path, wheel_of, recorded: Path | None = None) -> tuple:
    """The row's one run (a regression row first copies `recorded`, a healthy row's baseline, to its
    own --baseline); its verdict (typed.verdict), exit code, what it printed, and its baseline path."""
    d = tmp / f"row{i}"
    for sub in ("racks", "base", "out", "elsewhere"):
        (d / sub).mkdir(parents=True)
    rack, base = d / "racks" / "rack.toml", d / "base" / "base.json"
    shutil.copy(REPO / "rackgate/sim/racks/sim.toml", rack)
    if recorded is not None:
        shutil.copy(recorded, base)
    cwd = {"checkout": REPO, "its parent": REPO.parent, "elsewhere": d / "elsewhere"}[row["cwd"]]
    argv0, env = _launcher(row, wheel_of)
    name = row["run"]
    args = {"healthy": [*SELECT, "--record-baseline"], "fault": [*SELECT], "regression": ["-m", "regression"]}[name]
    opts: list[tuple[str, str | Path]] = [("--rack", rack)]
    opts += [("--sim-fault", FAULT)] if name == "fault" else [("--baseline", base)]
    opts += [("--verdict-file", d / "out" / f"{name}.json"), ("--junitxml", d / "out" / f"{name}.xml"),
             ("--alluredir", d / "out" / f"allure-{name}")]
    argv = [*argv0, "-p", "no:cacheprovider", "-q", *args, *_typed(row, cwd, opts)]
    p = (typed.run(argv, cwd) if env is None else
         typed.subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                              stdin=typed.subprocess.DEVNULL))
    said = f"{row}: {' '.join(argv)}\nrc {p.returncode}\n{p.stdout[-2500:]}\n{p.stderr[-1500:]}"
    assert (d / "out" / f"{name}.json").is_file(), said
    return typed.verdict(d / "out" / f"{name}.json"), p.returncode, p.stdout, said, base


@pytest.mark.timeout(1800)   # a bound: 13 suite runs on a busy 2-core machine
def test_every_typed_form_gives_the_same_verdicts(tmp_path, request):
    cache: dict = {}

    def wheel_of():
        if "w" not in cache:
            cache["w"] = request.getfixturevalue("wheel")
        return cache["w"]
    if any(r["launcher"].startswith("wheel") for r in ROWS):
        wheel_of()   # built once, before the rows run side by side
    first_rows = [(i, r) for i, r in enumerate(ROWS) if r["run"] != "regression"]
    with ThreadPoolExecutor(2) as pool:
        done = dict(zip((i for i, _ in first_rows),
                        pool.map(lambda ir: _one_run(ir[0], ir[1], tmp_path, wheel_of), first_rows)))
        healthy_bases = [done[i][4] for i, r in first_rows if r["run"] == "healthy"]
        for i, r in first_rows:   # each healthy row recorded its baseline where its --baseline says
            assert r["run"] != "healthy" or done[i][4].is_file(), done[i][3]
        # each regression row reads back another healthy row's baseline (in its own typed form)
        later = [(i, r, healthy_bases[k % len(healthy_bases)])
                 for k, (i, r) in enumerate((i, r) for i, r in enumerate(ROWS) if r["run"] == "regression")]
        done |= dict(zip((i for i, _, _ in later),
                         pool.map(lambda a: _one_run(a[0], a[1], tmp_path, wheel_of, a[2]), later)))
    by_kind = {k: [done[i] for i, r in enumerate(ROWS) if r["run"] == k] for k in DIMS["run"]}
    healthy, fault, regression = (by_kind[k][0][0] for k in DIMS["run"])
    # the verdicts compared are about something: health passes, the fault is found on its node
    assert healthy["verdict"] == "PASS" and healthy["items"], by_kind["healthy"][0][3]
    assert fault["verdict"] == "FAIL" and [n for n, (v, _, _) in fault["nodes"].items() if v == "FAIL"] == ["node2"], \
        by_kind["fault"][0][3]
    assert regression["verdict"] == "PASS" and any("PLAT-ATOM-COMMIT" in t for t in regression["items"]), \
        by_kind["regression"][0][3]
    for name, got in by_kind.items():
        for v, rc, _, said, _ in got:
            assert v == got[0][0], said
            assert rc == {"fault": 1}.get(name, 0), said
    loaded = [bl.load(b) for b in healthy_bases]
    facts = [{k: (f.value, f.unit) for k, f in b.facts.items()} if b else {} for b in loaded]
    assert facts[0] and all(f == facts[0] for f in facts), facts   # the same baseline however typed
    for _, _, out, said, _ in by_kind["regression"]:
        assert "facts within tolerance" in out and "REGRESSED" not in out and "missing" not in out, said
