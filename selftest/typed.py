"""Run the suite as a user types it (rackgate/pytest_plugin.py's option forms): an argv as typed, in
a directory of the test's choosing, and read back what a run's verdict.json says per row and item
(times and paths aside), so that runs typed different ways can be compared."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .harness import REPO, user_env

PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider")


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A user's environment importing this checkout's rackgate first (from any directory)."""
    e = {**user_env(), **(extra or {})}
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), e.get("PYTHONPATH", "")) if p)
    return e


def run(argv: list[str], cwd: Path, timeout: float = 300, extra_env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env(extra_env), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def verdict(path: Path) -> dict:
    """What a verdict.json says, times and paths aside: the rack's verdict and exit code, each item's
    outcome, row and place, each node's and GPU's verdict, each finding's row and place."""
    v = json.loads(path.read_text())
    return {"verdict": v["verdict"], "exit_code": v["exit_code"], "counts": v["counts"],
            "items": {i["test"]: (i["outcome"], i["row"], i["where"]) for i in v["items"]},
            "nodes": {n["node"]: (n["verdict"], tuple(g["verdict"] for g in n["gpus"]),
                                  tuple(sorted((f["row"], f["where"]) for f in n["findings"])))
                      for n in v["nodes"]},
            "rack_findings": sorted((f["row"], f["where"]) for f in v["rack_findings"])}


Row = dict[str, str]


def _pairs(row: Row) -> set[tuple[tuple[str, str], tuple[str, str]]]:
    return set(itertools.combinations(sorted(row.items()), 2))


def pairwise(dims: Mapping[str, Sequence[str]], allowed: Callable[[Row], bool] = lambda r: True) -> list[Row]:
    """Rows of the cross product of dims (those `allowed`) such that every pair of two dimensions'
    values that some allowed row holds is held by a chosen row: greedy, deterministic (the first row
    covering the most pairs not yet covered), far fewer rows than the whole product; then, latest
    first, each row whose pairs the other chosen rows all hold is dropped (every row costs runs)."""
    every = [row for row in (dict(zip(dims, vals)) for vals in itertools.product(*dims.values())) if allowed(row)]
    need = set().union(*(_pairs(r) for r in every))
    left = set(need)
    chosen: list[Row] = []
    while left:
        best = max(every, key=lambda r: len(_pairs(r) & left))
        chosen.append(best)
        left -= _pairs(best)
    for i in reversed(range(len(chosen))):
        rest = chosen[:i] + chosen[i + 1:]
        if set().union(*(_pairs(r) for r in rest)) >= need:
            chosen = rest
    return chosen
