"""The fault matrix's verdicts, item by item, before and after a change to the item framework
(issue 56: the same verdicts on the whole matrix before and after).

    python3 -m benchmarks.matrix_verdicts run OUT.json [--jobs 2] [-k SUBSTRING]
    python3 -m benchmarks.matrix_verdicts compare BEFORE.json AFTER.json

`run` runs the healthy rack and every case (explicit and derived: rackgate.faultmatrix) the way
selftest/test_fault_matrix.py does (selftest/matrix.py's Runs: shared runs, solo re-runs) and writes
{"healthy": {item: [outcome, first line]}, "cases": {case: {"problems": [...], "how": ...,
"outcomes": {item: [outcome, first line]}}}}: each case's outcomes are its own part of its run.
`compare` reads both files with every item id migrated to its row-and-place id
(rackgate.ids.check_id: an old `rackgate/checks/test_declared.py::test_plat_driver[node1]` and a new
`PLAT-DRIVER::node1` compare as one) and prints every case and item whose outcome or diagnosis
(the message's first line, ids in it migrated too; the sim server's port and which rank or node
failed first where several fail at once masked: they vary from run to run of the same code)
differs; exit 1 on any difference.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

# What differs between two runs of one case whatever the code: the sim server's port, the first
# rank or node to give out where several fail at once (a boot's dead rank, a stall's first node),
# and how long a stalled boot was seen standing (8.0 s or 8.1 s past its 8 s limit).
VOLATILE = ((re.compile(r"(https?://[\w.-]+):\d+"), r"\1:PORT"),
            (re.compile(r"\[node\d+/dp\d+\]"), "[NODE/RANK]"),
            (re.compile(r"rank \d+: (connection closed by|timed out after \d+s waiting for) rank \d+"), "rank N: LOST"),
            (re.compile(r"SRV-RENDEZVOUS \[node\d+\]"), "SRV-RENDEZVOUS [NODE]"),
            (re.compile(r"the boot did not finish: node\d+:"), "the boot did not finish: NODE:"),
            (re.compile(r"no progress after (`[^`]*`) for \d+(?:\.\d+)?s"), r"no progress after \1 for Ns"))
OLD_ID = re.compile(r"(?:rackgate/checks/)?[\w/]+\.py::test_\w+(?:\[[^\]\s]*\])?")


def _line(msg: str) -> str:
    return next((ln.strip() for ln in (msg or "").splitlines() if ln.strip()), "")


def run(out: Path, jobs: int, only: str) -> int:
    from rackgate import faultmatrix
    from selftest import matrix as mx
    cases = [c for c in faultmatrix.cases() if only in mx.case_id(c)]
    runs = mx.Runs(cases, jobs=jobs)
    names = ([mx.HEALTHY] if not only else []) + [mx.case_id(c) for c in cases]
    runs.start(names)
    body: dict[str, Any] = {"healthy": {}, "cases": {}}
    try:
        if not only:
            h = runs.get(mx.HEALTHY)
            assert h is not None
            body["healthy"] = {t: [o.status, _line(o.message)] for t, o in sorted(h.outcomes.items())}
            body["healthy_problems"] = mx.judge_healthy(h)
        for c in cases:
            name = mx.case_id(c)
            v = runs.verdict(name)
            body["cases"][name] = {"problems": v.problems, "how": v.how,
                                   "outcomes": {t: [o.status, _line(o.message)] for t, o in sorted(v.run.outcomes.items())}}
            print(f"{name}: {len(v.run.outcomes)} items, {len(v.problems)} problems ({v.how[:80]})", flush=True)
    finally:
        runs.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
    return 0


def _norm(outcomes: dict[str, list[str]]) -> dict[str, tuple[str, str]]:
    from rackgate.ids import check_id
    from rackgate.registry import server_rows
    servers = server_rows()
    return {check_id(t, servers): (s, OLD_ID.sub(lambda m: check_id(m.group(0), servers), line))
            for t, (s, line) in outcomes.items()}


def _masked(line: str) -> str:
    for pattern, by in VOLATILE:
        line = pattern.sub(by, line)
    return line


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    diffs: list[str] = []
    worded: list[str] = []  # the same outcome, the diagnosis worded otherwise only where a run varies anyway

    def items(where: str, x: dict[str, list[str]], y: dict[str, list[str]]) -> None:
        nx, ny = _norm(x), _norm(y)
        for t in sorted(nx.keys() | ny.keys()):
            ox, oy = nx.get(t), ny.get(t)
            if ox is None or oy is None or ox[0] != oy[0] or _masked(ox[1]) != _masked(oy[1]):
                diffs.append(f"{where}: {t}: {ox} -> {oy}")
            elif ox[1] != oy[1]:
                worded.append(f"{where}: {t}")
    items("healthy", a.get("healthy", {}), b.get("healthy", {}))
    for name in sorted(a["cases"].keys() | b["cases"].keys()):
        ca, cb = a["cases"].get(name), b["cases"].get(name)
        if ca is None or cb is None:
            diffs.append(f"{name}: only {'after' if ca is None else 'before'}")
            continue
        if bool(ca["problems"]) != bool(cb["problems"]):
            diffs.append(f"{name}: matrix problems {ca['problems']} -> {cb['problems']}")
        items(name, ca["outcomes"], cb["outcomes"])
    n_items = sum(len(c["outcomes"]) for c in a["cases"].values()) + len(a.get("healthy", {}))
    print(f"{len(a['cases'])} cases and the healthy run, {n_items} item verdicts before; "
          f"{len(diffs)} differences (outcome, or diagnosis with a run's ports and first-to-fail masked); "
          f"{len(worded)} diagnoses differ only in those")
    for d in diffs:
        print("  " + d)
    return 1 if diffs else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m benchmarks.matrix_verdicts")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("-k", default="", help="only the cases whose id contains this (and no healthy run)")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    a = p.parse_args(argv)
    return run(a.out, a.jobs, a.k) if a.cmd == "run" else compare(a.before, a.after)


if __name__ == "__main__":
    sys.exit(main())
