"""The fault matrix runner: one suite run per case (plus the healthy run), run concurrently, and
the judgment of each run against its case. Pure judgment functions; the runs go through
selftest.harness.run_suite like any user run.

Why one run per fault, never several faults in one run: the matrix proves that a fault fails
*exactly* its checks. With two faults in one run, a side effect of one on a test the other is
expected to fail would be masked (both expected it to fail), so a wrong matrix case could pass.
The runs are made faster instead: only the suite's own plugins load, and up to JOBS runs go at
once (they spend much of their time waiting on the sim's processes; see docs/reports.md for the
measured figures).
"""
from __future__ import annotations

import os
import re
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from rackgate.catalogue import Row, case_problems

from .harness import SuiteRun, run_suite

# How many suite runs go at once (RACKGATE_MATRIX_JOBS overrides; 1 = one after the other).
JOBS = int(os.environ.get("RACKGATE_MATRIX_JOBS", "2"))
RUN_TIMEOUT_S = 300
HEALTHY_TIMEOUT_S = 600  # the whole suite, every area
HEALTHY = "healthy"
# A verdict message starts with a catalogue id (rackgate.report.verdict.message); a suite error
# with "could not observe".
VERDICT = re.compile(r"^\s*(?:[\w.]+\.)?(?:CheckFailed: )?([A-Z]+-[A-Z0-9-]+) \[")
COULD_NOT = "could not observe"


def case_id(case: dict) -> str:
    return case.get("id") or case["fault"]


def suite_args(case: dict, baseline: Path | None = None) -> list[str]:
    args = list(case.get("paths", []))
    args += ["-m", case["select"]] if case.get("select") else []
    args += ["--sim-fault", case["fault"]]
    if baseline is not None:
        args += ["--baseline", str(baseline)]
    return args


def run_case(case: dict | None, workdir: Path) -> SuiteRun:
    """The suite run a case needs (None: the healthy rack, everything selected). A case with
    `baseline` (a -m selection, or a list of pytest arguments) first records a baseline on the
    healthy rack, then runs."""
    (workdir / "record").mkdir(parents=True, exist_ok=True)
    if case is None:
        return run_suite(workdir, timeout=HEALTHY_TIMEOUT_S)
    baseline = None
    if case.get("baseline"):
        baseline = workdir / "baseline.json"
        args = case["baseline"] if isinstance(case["baseline"], list) else ["-m", case["baseline"]]
        rec = run_suite(workdir / "record", *args, "--record-baseline", "--baseline", str(baseline),
                        timeout=RUN_TIMEOUT_S)
        if rec.rc != 0 or not baseline.exists():
            rec.stderr += f"\nmatrix: recording the healthy baseline failed (rc {rec.rc})"
            return rec
    (workdir / "run").mkdir(exist_ok=True)
    return run_suite(workdir / "run", *suite_args(case, baseline), timeout=RUN_TIMEOUT_S)


class Runs:
    """Every run the matrix needs, started at once on a pool of JOBS; each test waits on its own."""

    def __init__(self, cases: list[dict], jobs: int = JOBS):
        self._dir = Path(tempfile.mkdtemp(prefix="rackgate-matrix-"))
        self._pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="matrix")
        self._futures: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._cases = {case_id(c): c for c in cases}

    def start(self, names: list[str]) -> None:
        for name in names:
            self.get(name, wait=False)

    def get(self, name: str, wait: bool = True) -> SuiteRun | None:
        with self._lock:
            fut = self._futures.get(name)
            if fut is None:
                case = None if name == HEALTHY else self._cases[name]
                fut = self._pool.submit(run_case, case, self._dir / re.sub(r"[^\w.-]", "_", name))
                self._futures[name] = fut
        return fut.result() if wait else None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


# --- judgment ------------------------------------------------------------------------------


def validate(cases: list[dict], rows: dict, faults: dict) -> list[str]:
    """Matrix data errors: unknown keys, unknown rows or faults, a case whose row is not its
    fault's row, duplicate case ids, malformed test ids."""
    problems, seen = [], set()
    for c in cases:
        where = f"{c.get('source')}: case {c.get('fault')!r}"
        problems += case_problems(c)  # the shape: rackgate.catalogue.MatrixCase (extra="forbid")
        if "fault" not in c or "row" not in c:
            problems.append(f"{where}: needs 'fault' and 'row'")
            continue
        name = c["fault"].partition("@")[0]
        if c["row"] not in rows:
            problems.append(f"{where}: unknown catalogue row {c['row']!r}")
        if name not in faults:
            problems.append(f"{where}: unknown sim fault {name!r}")
        elif faults[name].row != c["row"]:
            problems.append(f"{where}: the fault reproduces {faults[name].row}, not {c['row']}")
        if case_id(c) in seen:
            problems.append(f"{where}: duplicate case id {case_id(c)!r} (give one an 'id')")
        seen.add(case_id(c))
        for tid in [*c.get("fail", []), *c.get("also_fail", [])]:
            if not re.fullmatch(r"tests/[\w/]+\.py::\w+(\[[^\]]+\])?", tid):
                problems.append(f"{where}: {tid!r} is not a test id (tests/<file>.py::<name>[<param>])")
    return problems

def _first_line(msg: str) -> str:
    return next((l.strip() for l in msg.splitlines() if l.strip()), "(no message)")[:200]


def has_diagnosis(msg: str, row: Row) -> list[str]:
    """What of the row's diagnosis a failure message lacks (empty: it has it all)."""
    return [what for what, text in (("id", row.id), ("meaning", row.meaning), ("action", row.action))
            if text not in msg]


def is_explained(msg: str) -> bool:
    """A failure that says what it is: a catalogue verdict or a could-not-observe."""
    return bool(VERDICT.search(msg)) or COULD_NOT in msg


def judge_healthy(run: SuiteRun) -> list[str]:
    if not run.outcomes:
        return [f"the healthy run produced no test results (rc {run.rc}): {run.stderr.strip()[-800:]}"]
    problems = [f"{tid}: {o.status} on the healthy rack: {_first_line(o.message)}"
                for tid, o in sorted(run.outcomes.items()) if o.status in ("failed", "error")]
    if run.rc != 0 and not problems:
        problems.append(f"the healthy run exited {run.rc}: {run.stderr.strip()[-800:]}")
    return problems


NOT_RUN = re.compile(r"not run: ([A-Z]+-[A-Z0-9-]+) ")


def not_run_after_a_failure(message: str, run: SuiteRun) -> bool:
    """An ERROR "not run: ROW ..." (rackgate.errors.NotRun) whose ROW did fail in this run (a
    verdict message starts with its row id)."""
    m = NOT_RUN.search(message or "")
    if not m:
        return False
    root = m.group(1)
    return any(o.status in ("failed", "error") and (o.message or "").lstrip().startswith(root)
               for o in run.outcomes.values()) or root in ("SRV-BOOT", "SRV-MODELS", "SRV-ALIVE")


def judge_case(case: dict, run: SuiteRun, row: Row) -> list[str]:
    """Every way the run differs from the case: an expected failure that passed, was not run, or
    lacks its diagnosis; any other test that failed."""
    if not run.outcomes:
        return [f"the run produced no test results (rc {run.rc}): {run.stderr.strip()[-800:]}"]
    problems = []
    fail, also = list(case.get("fail", [])), list(case.get("also_fail", []))
    for tid in fail + also:
        o = run.outcomes.get(tid)
        if o is None:
            problems.append(f"{tid}: expected to fail but it did not run (not collected, or not selected by "
                            f"-m {case.get('select')!r})")
        elif o.status not in ("failed", "error"):
            problems.append(f"{tid}: expected to fail, but it {o.status}")
        elif tid in fail:
            if o.status != "failed":
                problems.append(f"{tid}: expected a FAILED verdict of {row.id}, got an ERROR: {_first_line(o.message)}")
            missing = has_diagnosis(o.message, row)
            if missing:
                problems.append(f"{tid}: the failure lacks {row.id}'s diagnosis ({', '.join(missing)}): "
                                f"{_first_line(o.message)}")
        elif not is_explained(o.message):
            problems.append(f"{tid}: fails without a diagnosis (neither a catalogue verdict nor a "
                            f"could-not-observe): {_first_line(o.message)}")
    expected = set(fail) | set(also)
    for tid, o in sorted(run.outcomes.items()):
        if tid not in expected and o.status == "error" and not_run_after_a_failure(o.message, run):
            continue  # a consequence the catalogue declares (`needs`): "not run: <ROW> failed (see it)"
        if tid not in expected and o.status in ("failed", "error"):
            problems.append(f"{tid}: {o.status} but the case does not expect it: {_first_line(o.message)}")
    for needle in case.get("output", []):
        if needle not in run.stdout:
            problems.append(f"the run's output lacks {needle!r}")
    if expected and run.rc != 1:
        problems.append(f"the suite exited {run.rc}, not 1 (tests failed)")
    if not expected and run.rc != 0:
        problems.append(f"the suite exited {run.rc}, not 0")
    return problems
