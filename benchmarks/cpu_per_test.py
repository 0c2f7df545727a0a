"""Per-test CPU seconds of a self-test run's whole process tree, as a pytest plugin: the run's own
process, the children it has waited for, and every live descendant (utime + stime + their waited
children), read before and after each test -- so a session-scoped model server's generation is
charged to the test that made it work, not to the session's end. Wall seconds and the 1-minute
load average beside them: on a shared machine the wall moves with the load, the CPU much less.

    python3 -m pytest -p benchmarks.cpu_per_test selftest/realengine/test_gate_command.py
    RACKGATE_CPU_OUT=cpu.jsonl (default reports/cpu_per_test.jsonl), RACKGATE_CPU_TAG=before

One JSON line per test ({"id", "cpu", "wall", "load", "end", "worker"}: "end" the test's end as Unix
seconds, "worker" the xdist worker or "main", for a timeline of a whole run's tail) and one for the
session's total.
Descendants that left the tree unreaped (re-parented to init) are not counted.
"""
from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path

import pytest

TCK = os.sysconf("SC_CLK_TCK")


def _descendants_cpu(root: int) -> float:
    children: dict[int, list[tuple[int, list[str]]]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        children.setdefault(int(rest[1]), []).append((int(d), rest))
    total, todo = 0.0, [root]
    while todo:
        for pid, rest in children.get(todo.pop(), []):
            total += sum(int(x) for x in rest[11:15]) / TCK  # utime stime cutime cstime
            todo.append(pid)
    return total


def tree_cpu() -> float:
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime + _descendants_cpu(os.getpid())


def _write(row: dict[str, object]) -> None:
    out = Path(os.environ.get("RACKGATE_CPU_OUT", "reports/cpu_per_test.jsonl"))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps({**row, "tag": os.environ.get("RACKGATE_CPU_TAG", "")}) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    cpu, wall, load = tree_cpu(), time.monotonic(), os.getloadavg()[0]
    yield
    _write({"id": item.nodeid, "cpu": round(tree_cpu() - cpu, 1), "wall": round(time.monotonic() - wall, 1),
            "load": [round(load, 1), round(os.getloadavg()[0], 1)], "end": round(time.time(), 1),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")})


def pytest_sessionfinish(session: pytest.Session) -> None:
    _write({"id": "(session)", "cpu": round(tree_cpu(), 1)})
