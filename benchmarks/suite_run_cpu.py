"""CPU seconds of the self-tests' suite runs on the sim: selftest/harness.py's run_suite, as a
self-test calls it, in one or more checkouts.

    python3 benchmarks/suite_run_cpu.py [--runs 5] [--tree DIR ...] SELECTION [SELECTION ...]

Each run is `run_suite(tmp, "-m", SELECTION)` of the tree's own harness (SELECTION `all`: no -m,
the whole healthy run), its command line and its rackgate, in a fresh interpreter started in the
tree's root; the figure is the suite run's CPU:
user + sys of the pytest process and every child it waited for (getrusage(RUSAGE_CHILDREN) around
the call, so the harness's own start-up is not in it). Several trees run in turn (run i of every
tree before run i+1 of any), so that the machine's load falls on each alike; the medians follow.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ONE = """
import resource, sys, tempfile
from pathlib import Path
from selftest.harness import run_suite
with tempfile.TemporaryDirectory(prefix="suite-cpu-") as d:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = run_suite(Path(d), *(["-m", sys.argv[1]] if sys.argv[1] != "all" else []), timeout=900)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    bad = sorted(k for k, o in run.outcomes.items() if o.status not in ("passed", "skipped"))
    print(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, run.rc, len(run.outcomes), len(bad))
"""


def one_run(tree: Path, selection: str) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))}
    env["PYTHONPATH"] = str(tree)
    p = subprocess.run([sys.executable, "-c", ONE, selection], cwd=tree, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{tree} -m {selection}: the harness failed: {p.stderr.strip()[-500:]}")
    cpu, rc, items, bad = p.stdout.split()
    return float(cpu), f"rc {rc}, {items} items, {bad} not passed"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("selections", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tree", action="append", type=Path, help="a checkout's root (default: this one)")
    a = ap.parse_args()
    trees = [t.resolve() for t in a.tree] if a.tree else [Path(__file__).resolve().parent.parent]
    cpu: dict[tuple[Path, str], list[float]] = {}
    for i in range(a.runs):
        for sel in a.selections:
            for tree in trees:
                c, said = one_run(tree, sel)
                cpu.setdefault((tree, sel), []).append(c)
                print(f"run {i + 1} {tree} -m {sel}: {c:.2f} CPU s ({said}), load {os.getloadavg()[0]:.1f}", flush=True)
    for (tree, sel), xs in cpu.items():
        print(f"{tree} -m {sel}: median {statistics.median(xs):.2f} CPU s of {len(xs)} ({', '.join(f'{x:.2f}' for x in xs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
