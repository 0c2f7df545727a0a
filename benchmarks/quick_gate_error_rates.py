"""The quick GSM8K gate's error rates and question counts, by simulation.

For a rack whose accuracy over the 1319 test questions is p, the gate draws questions in a
random order without replacement and runs the truncated sequential test of
rackgate/gates/sequential.py (the same code decides here). Printed per p: how often it passes,
how many questions it needed (mean, 95th percentile), and how often the question limit decided.

    python benchmarks/quick_gate_error_rates.py [--runs 4000] [--rack racks/example-gfx1250.toml]

The rack file's [accuracy] section sets the test (quick_pass_accuracy / expected - tolerance,
quick_fail_accuracy, quick_false_pass, quick_false_fail, quick_max_questions).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rackgate.config import load
from rackgate.gates.sequential import Sprt
from rackgate.gsm8k.setup import sprt_for

POPULATION = 1319


def simulate(s: Sprt, p: float, runs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(passed, questions used, decided by the limit) for `runs` gates on a rack at accuracy p."""
    correct = round(p * POPULATION)
    items = np.zeros(POPULATION, dtype=np.int32)
    items[:correct] = 1
    m = min(s.max_n, POPULATION)
    order = np.argsort(rng.random((runs, POPULATION)), axis=1)[:, :m]
    k = np.cumsum(items[order], axis=1)
    n = np.arange(1, m + 1)
    llr = k * s.step_correct + (n - k) * s.step_wrong
    up, down = llr >= s.upper, llr <= s.lower
    crossed = up | down
    any_cross = crossed.any(axis=1)
    first = np.where(any_cross, crossed.argmax(axis=1), m - 1)
    rows = np.arange(runs)
    settled_pass = up[rows, first] & any_cross
    # not settled: the evidence so far decides (the sign of llr), or the exact accuracy when
    # the whole population was asked
    at_end = llr[rows, m - 1]
    if m >= POPULATION:
        end_pass = k[rows, m - 1] / m >= s.p_pass
    else:
        end_pass = at_end >= 0
    passed = np.where(any_cross, settled_pass, end_pass)
    return passed, first + 1, ~any_cross


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=4000)
    ap.add_argument("--rack", default=str(Path(__file__).resolve().parent.parent / "racks" / "example-gfx1250.toml"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    s = sprt_for(load(a.rack).accuracy)
    rng = np.random.default_rng(a.seed)
    t0 = time.monotonic()
    print(f"quick gate: PASS at accuracy >= {s.p_pass:.4f}, FAIL at <= {s.p_fail:.4f}; stated false pass "
          f"{s.false_pass:g} (at {s.p_fail:.4f}), false fail {s.false_fail:g} (at {s.p_pass:.4f}); "
          f"limit {s.max_n} questions; {a.runs} simulated gates per row, {POPULATION} questions drawn "
          f"without replacement")
    print(f"fastest FAIL: {s.fastest_fail} wrong answers in a row; fastest PASS: {s.fastest_pass} right in a row")
    print(f"{'accuracy':>9} {'P(pass)':>8} {'mean q':>7} {'p95 q':>6} {'limit%':>7}  reading")
    grid = [0.0, 0.5, 0.8, 0.85, 0.88, 0.90, 0.91, 0.92, 0.93, 0.94, s.p_pass, 0.955, 0.9621, 0.97, 0.98]
    for p in grid:
        passed, used, limit = simulate(s, p, a.runs, rng)
        pp = passed.mean()
        if p <= s.p_fail:
            reading = f"false pass {pp:.4f} (stated <= {s.false_pass:g})"
        elif p >= s.p_pass:
            reading = f"false fail {1 - pp:.4f} (stated <= {s.false_fail:g})"
        else:
            reading = "indifference zone: the full lm-eval run decides"
        print(f"{p:>9.4f} {pp:>8.4f} {used.mean():>7.1f} {int(np.percentile(used, 95)):>6d} "
              f"{100 * limit.mean():>6.1f}%  {reading}")
    print(f"({time.monotonic() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
