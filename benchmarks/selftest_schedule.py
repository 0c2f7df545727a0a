"""Replay a whole self-test run's test seconds under xdist's `loadgroup` hand-out, to see what a
schedule change does before paying for a whole run (docs/performance.md, wave 5).

    python3 benchmarks/selftest_schedule.py reports/selftest-junit.xml [--workers 5] [--reorder] [-v]

Collects `selftest` in this process (the hand-out order and groups are selftest/conftest.py's and
selftest/tiers.py's), reads each test's seconds from the junit of a whole run (README command 2),
and replays pytest-xdist 3.x's LoadScopeScheduling: each worker first gets one group; a worker with
two or fewer of its tests left gets the next group in the queue. --reorder replays xdist's default
(groups by number of tests, most first), which selftest/conftest.py switches off. A test absent
from the junit counts 0.5 s. Prints when each worker ends and, with -v, where each long group went.
Seconds measured under load stay loaded: this compares schedules, it does not predict a quiet run.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


class _Groups:
    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items) -> None:
        for it in items:
            mark = it.get_closest_marker("xdist_group")
            self.items.append((it.nodeid, mark.args[0] if mark is not None and mark.args else it.nodeid))


def seconds(junit: Path) -> dict[tuple[str, str], float]:
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        if name.rfind("@") > name.rfind("]"):
            name = name[:name.rfind("@")]
        out[(case.get("classname", ""), name)] = float(case.get("time") or 0)
    return out


def replay(units: list[tuple[str, list[float]]], workers: int) -> tuple[list[float], list[list[tuple[float, str, float]]]]:
    queue = collections.deque(units)
    pending: list[collections.deque[float]] = [collections.deque() for _ in range(workers)]
    clock = [0.0] * workers
    log: list[list[tuple[float, str, float]]] = [[] for _ in range(workers)]

    def assign(w: int) -> None:
        group, tests = queue.popleft()
        pending[w].extend(tests)
        log[w].append((clock[w], group, sum(tests)))

    for w in range(workers):
        if queue:
            assign(w)
    while any(pending):
        w = min((i for i in range(workers) if pending[i]), key=lambda i: clock[i] + pending[i][0])
        clock[w] += pending[w].popleft()
        for i in range(workers):
            if queue and len(pending[i]) <= 2 and (i == w or not pending[i]):
                assign(i)
    return clock, log


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument("--workers", type=int, default=5)
    ap.add_argument("--reorder", action="store_true", help="xdist's default: groups by number of tests, most first")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    sys.path.insert(0, str(REPO))  # this checkout's rackgate and selftest
    os.chdir(REPO)
    groups = _Groups()
    rc = pytest.main([str(REPO / "selftest"), "--co", "-q", "-p", "no:cacheprovider"], plugins=[groups])
    if rc != 0 or not groups.items:
        sys.exit(f"collection failed (exit {rc})")
    took = seconds(a.junit)
    units: dict[str, list[float]] = {}
    for nodeid, group in groups.items:
        path, _, name = nodeid.partition("::")
        units.setdefault(group, []).append(took.get((path[:-3].replace("/", "."), name), 0.5))
    order = list(units.items())
    if a.reorder:
        order.sort(key=lambda kv: -len(kv[1]))
    ends, log = replay(order, a.workers)
    print(f"\n{len(groups.items)} tests, {sum(map(sum, units.values())):.0f} s summed, {a.workers} workers: "
          f"workers end at {', '.join(f'{e:.0f}' for e in ends)} s; the run: {max(ends):.0f} s")
    if a.v:
        for w, got in enumerate(log):
            print(f"worker {w}: " + "; ".join(f"{g} at {t:.0f} s ({s:.0f} s)" for t, g, s in got if s >= 60))


if __name__ == "__main__":
    main()
