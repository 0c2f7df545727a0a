"""Which checks the suite has: every collected test with its catalogue row and markers.

Loaded as a plugin for a collect-only run (`pytest --co -p rackgate.report.inventory
--rackgate-inventory FILE`); the catalogue page and the coverage self-test read the JSON it
writes. collect() runs that in a subprocess so the caller's own pytest session is not involved.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    import pytest

from ..ids import check_of

REPO = Path(__file__).resolve().parents[2]


class Check(TypedDict):
    """One collected test, as the inventory JSON holds it."""
    nodeid: str
    row: str | None
    function: str
    markers: list[str]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--rackgate-inventory", metavar="FILE", default=None,
                     help="write the collected checks (node id, catalogue row, markers) as JSON")


def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("rackgate_inventory")
    if not path:
        return
    items: list[Check] = []
    for item in session.items:
        row = item.get_closest_marker("row")
        items.append({"nodeid": item.nodeid, "row": row.args[0] if row and row.args else None,
                      "function": check_of(item.nodeid),  # a declared check: its row
                      "markers": sorted({m.name for m in item.iter_markers()} - {"row", "parametrize"})})
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(items, indent=1))
    tmp.replace(path)


class InventoryError(RuntimeError):
    pass


@functools.lru_cache(maxsize=4)
def collect(args: tuple[str, ...] = (), timeout: float = 120) -> list[Check]:
    """Every check of the suite (rackgate/checks/), collected on the simulated rack (once per process and
    arguments: the coverage and catalogue-page self-tests share one collection)."""
    with tempfile.TemporaryDirectory(prefix="rackgate-inv-") as d:
        out = Path(d) / "inventory.json"
        cmd = [sys.executable, "-m", "pytest", "--co", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
               "-p", "rackgate.pytest_plugin", "-p", "pytest_timeout", "-p", "rackgate.report.inventory",
               f"--rackgate-inventory={out}", *args]
        env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        try:
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise InventoryError(f"collecting the suite took over {timeout:g}s") from None
        if not out.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
            raise InventoryError("collecting the suite failed (rc %d):\n%s" % (proc.returncode, "\n".join(tail)))
        checks: list[Check] = json.loads(out.read_text())
        return checks


def checks_by_row(items: list[Check]) -> dict[str, list[str]]:
    """Row id -> the test functions (ids without parameters) that implement it."""
    out: dict[str, list[str]] = {}
    for it in items:
        if it["row"]:
            fns = out.setdefault(it["row"], [])
            if it["function"] not in fns:
                fns.append(it["function"])
    return out


@functools.lru_cache(maxsize=1)
def matrix_cases(timeout: float = 120) -> list[dict[str, Any]]:
    """The fault matrix with its derived cases (rackgate/faultmatrix.py), asked of the sim in a
    subprocess as the checks are (the product never imports the sim)."""
    cmd = [sys.executable, "-m", "rackgate.faultmatrix"]
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise InventoryError(f"listing the fault matrix took over {timeout:g}s") from None
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-15:]
        raise InventoryError("listing the fault matrix failed (rc %d):\n%s" % (proc.returncode, "\n".join(tail)))
    cases: list[dict[str, Any]] = json.loads(proc.stdout)
    return cases

