"""The fault matrix runner: the suite runs the matrix needs (the healthy run, and one run per
case or per group of cases), run concurrently, and the judgment of each case against its run.
Pure planning and judgment functions; the runs go through selftest.harness.run_suite like any
user run.

Why several faults may share one run, and what guards it. The matrix proves that a fault fails
*exactly* its checks. Each suite run costs a fixed few CPU-seconds (pytest start-up, imports, the
sim's start, a server boot for serving cases) whatever it selects, so cases that cannot interact
share one run (plan()): the run selects the union of their paths and applies all their faults,
and each case is judged on the part of the run that is its own (the tests in its paths). The
danger is masking: fault X's side effect failing the test that fault Y expects to fail, hiding a
broken check for Y. Cases share a run only when (computed from the case data, never by hand):
- their rows differ but are of one area (platform, fabric, serving, accuracy: each layer runs on
  the ones below, so a fault in one could reach the checks above it), and their test files are
  disjoint;
- their faults touch disjoint parts of the sim's state (fault_touches(): each fault applied
  alone to a healthy state, diffed), and no test in one case's paths has a row that `needs`
  (catalogue data, transitively) a row the other case fails, or is of a row the other case's
  checks need (its fault may reach those), nor runs on a server the other case's fault stops
  (SERVER_ROOTS) (needs_problem());
- the run's selection is their selections or-ed, and each case's part of it is exactly what its
  own selection picks from its paths, read from the suite's collected markers
  (selection_problem(); the same tests as its solo run);
- none records a baseline, checks `output` text (the run's output is shared), runs without
  `paths` (a whole area), or says `solo = "<why>"`; the healthy run is never shared;
- at most MAX_GROUP cases (a re-run costs one run per case).
The shared run is then judged strictly (judge_group()): every case as if alone, plus nothing may
fail outside every case's expectations, no failure in one case's tests may carry another case's
row, and no test may be "not run" because of another case's row. On ANY difference the cases it
implicates (those whose part differed, and those whose row reached into another's part) are re-run
alone and judged on that solo run, which is the verdict that counts; the others share one run
again, judged as strictly, and on any difference there each of them is re-run alone too (split();
a difference outside every case's part re-runs every case alone). The test's report says a re-run
happened and why, and the session's summary lists the re-runs. (Re-running every case alone cost
19 solo runs a module run for three groups that each differed in one or two cases: wave 10.)
What the judgment alone cannot see is a side effect of X that makes Y's check fail with Y's
verdict and nothing of X's; the guards above (disjoint files, disjoint state, no declared
dependency) are what rule that out, and RACKGATE_MATRIX_SOLO=1 is the check on them (the same
verdicts both ways: docs/performance.md).

RACKGATE_MATRIX_SOLO=1 gives every case its own run (the behaviour before grouping; for
comparison, or to debug one case). Up to JOBS runs go at once (RACKGATE_MATRIX_JOBS).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from rackgate.catalogue import Row, case_problems
from rackgate.ids import DECLARED, ID_PREFIX, is_row_id

from .harness import SuiteRun, run_suite

# How many suite runs go at once (RACKGATE_MATRIX_JOBS overrides; 1 = one after the other).
JOBS = int(os.environ.get("RACKGATE_MATRIX_JOBS", "4"))
RUN_TIMEOUT_S = 300
HEALTHY_TIMEOUT_S = 600  # the whole suite, every area (also a shared run's bound)
# What one matrix test may wait: its run queued behind others, a shared run, then its solo re-run.
WAIT_TIMEOUT_S = 2400
HEALTHY = "healthy"
# The declared checks' file, as a path names it: every row's items are in it.
DECLARED_FILE = ID_PREFIX + DECLARED.name
# A verdict message starts with a catalogue id (rackgate.report.verdict.message); a suite error
# with "could not observe".
VERDICT = re.compile(r"^\s*(?:[\w.]+\.)?(?:CheckFailed: )?([A-Z]+-[A-Z0-9-]+) \[")
COULD_NOT = "could not observe"


# What a suite run costs, by what it selects (a server boot and the gate dominate; platform
# checks are a few probes per node): relative weights for the order the pool starts runs in.
RUN_COST = (("gate", 4), ("serving", 4), ("regression", 4), ("accuracy", 4), ("fabric", 2), ("survey", 1),
            ("platform", 1))


def run_cost(group: list[dict] | None) -> int:
    """The relative cost of a case's (or a group's) run; None is the healthy run, the whole suite."""
    if group is None:
        return 1000
    def one(case: dict) -> int:
        w = max((w for k, w in RUN_COST if k in case.get("select", "")), default=2)
        return w * (2 if case.get("baseline") and not reference_paths(case) else 1)  # its own recording first
    return sum(one(c) for c in group)


def case_id(case: dict) -> str:
    return case.get("id") or case["fault"]


def suite_args(case: dict, baseline: Path | None = None) -> list[str]:
    args = list(case.get("paths", []))
    args += ["-m", case["select"]] if case.get("select") else []
    args += ["--sim-fault", case["fault"]]
    if baseline is not None:
        args += ["--baseline", str(baseline)]
    return args


def run_group(group: list[dict], workdir: Path) -> SuiteRun:
    """The one suite run a group of cases shares (plan())."""
    (workdir / "record").mkdir(parents=True, exist_ok=True)
    return run_suite(workdir, *group_args(group), timeout=HEALTHY_TIMEOUT_S)


def run_case(case: dict | None, workdir: Path, baseline: Path | None = None) -> SuiteRun:
    """The suite run a case needs (None: the healthy rack, everything selected). A case with
    `baseline` (a -m selection, or a list of pytest arguments) first records a baseline on the
    healthy rack, then runs -- unless its baseline is given (its part of the healthy reference,
    own_baseline())."""
    (workdir / "record").mkdir(parents=True, exist_ok=True)
    if case is None:
        return run_suite(workdir, timeout=HEALTHY_TIMEOUT_S)
    if case.get("baseline") and baseline is None:
        baseline = workdir / "baseline.json"
        args = case["baseline"] if isinstance(case["baseline"], list) else ["-m", case["baseline"]]
        rec = run_suite(workdir / "record", *args, "--record-baseline", "--baseline", str(baseline),
                        timeout=RUN_TIMEOUT_S)
        if rec.rc != 0 or not baseline.exists():
            rec.stderr += f"\nmatrix: recording the healthy baseline failed (rc {rec.rc})"
            return rec
    (workdir / "run").mkdir(exist_ok=True)
    return run_suite(workdir / "run", *suite_args(case, baseline), timeout=RUN_TIMEOUT_S)


# --- the healthy reference: one recording for every case that compares with a healthy baseline

# A case with `baseline` compares its faulted run with what the healthy rack recorded. Each such
# case used to record its own baseline first: one more suite run (a pytest start-up, the sim, a
# server boot) per case, twelve in all. The healthy rack records the same facts whether its tests
# run alone or beside the others' (each check records its own facts, stamped with its test id),
# so one recording of the union of the cases' baseline tests serves them all, and each case gets
# its part of it: the facts its own tests recorded, the sets its own tests record (own_baseline()).
# A baseline given as a -m selection or with options (not a list of test paths) still records
# alone, as does every case under RACKGATE_MATRIX_SOLO=1 (the check on this: the same verdicts).
# Recorded sets and the row whose checks record them (rackgate.baseline.golden: the golden set).
SET_ROWS = {"golden": "SRV-GOLDEN"}


def reference_paths(case: dict) -> list[str]:
    """The tests a case's baseline is recorded from when they are test paths and nothing else
    (they can join the healthy reference); [] when it records alone (or records nothing)."""
    b = case.get("baseline")
    return list(b) if isinstance(b, list) and b and not any(a.startswith("-") for a in b) else []


def reference_args(cases: list[dict]) -> list[str]:
    """The healthy reference's selection: every sharing case's baseline tests, once each."""
    return list(dict.fromkeys(p for c in cases for p in reference_paths(c)))


def record_reference(cases: list[dict], workdir: Path) -> tuple[SuiteRun, Path]:
    """The one healthy recording of every sharing case's baseline tests (reference_args())."""
    (workdir / "record").mkdir(parents=True, exist_ok=True)
    baseline = workdir / "reference.json"
    rec = run_suite(workdir / "record", *reference_args(cases), "--record-baseline", "--baseline", str(baseline),
                    timeout=HEALTHY_TIMEOUT_S)
    if rec.rc != 0 or not baseline.exists():
        rec.stderr += f"\nmatrix: recording the healthy reference failed (rc {rec.rc})"
    return rec, baseline


def own_baseline(reference: Path, case: dict, items: list[dict], to: Path) -> Path:
    """The case's part of the healthy reference, as its own recording would have written it: the
    facts whose source (the test that recorded it) is in its baseline paths, and a set only when a
    test of the set's row is (items: the suite's collected tests)."""
    import json
    paths = reference_paths(case)
    body = json.loads(reference.read_text())
    body["facts"] = [f for f in body.get("facts", []) if f.get("source") and _in_paths(f["source"], paths)]
    sets = {k: v for k, v in body.pop("sets", {}).items()
            if any(it["row"] == SET_ROWS.get(k) and _in_paths(it["nodeid"], paths) for it in items)}
    if sets:
        body["sets"] = sets
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_text(json.dumps(body, indent=1) + "\n")
    return to


# --- planning: which cases share a run ------------------------------------------------------

SOLO = os.environ.get("RACKGATE_MATRIX_SOLO", "") not in ("", "0")
TOUCH_DEPTH = 3  # state paths are compared to this depth ("nodes.node2.plat", "server.rank_faults.X")


def _diff(a, b, path: tuple = ()) -> set[tuple]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: set[tuple] = set()
        for k in a.keys() | b.keys():
            out |= {path + (k,)} if k not in a or k not in b else _diff(a[k], b[k], path + (k,))
        return out
    return set() if a == b else {path}


def fault_touches(specs: list[str]) -> dict[str, frozenset[tuple]]:
    """What each fault changes in the sim's state: the fault applied alone to the shipped rack's
    healthy state, diffed against it (paths cut to TOUCH_DEPTH; a list is one leaf)."""
    import copy

    from rackgate import config
    from rackgate.sim import faults as sim_faults
    from rackgate.sim import state as sim_state
    from rackgate.sim.rack import SHIPPED_RACK

    rack = config.load(SHIPPED_RACK)
    healthy = sim_state.healthy(rack.sim.nodes, rack.gpus_per_node, rack.sim.accuracy)
    healthy.served_model, healthy.container = rack.server.served_model, rack.container
    healthy.image, healthy.atom_path = rack.image, rack.atom_path
    before = healthy.to_json()
    out = {}
    for spec in specs:
        st = copy.deepcopy(healthy)
        sim_faults.apply(st, spec)
        out[spec] = frozenset(p[:TOUCH_DEPTH] for p in _diff(before, st.to_json()))
    return out


def _overlap(p: str, q: str) -> bool:
    """Whether two paths share tests: a folder, a file, one test function of a file (file::name),
    or a declared check's row (PLAT-SHM: its items; the collector's file holds every row)."""
    p, q = p.rstrip("/"), q.rstrip("/")
    if is_row_id(p) and is_row_id(q):  # a row (every place of it) or one item of it: PLAT-SHM, PLAT-SHM::node2
        return p == q or any(a.startswith(b + "::") for a, b in ((p, q), (q, p)))
    if is_row_id(p) or is_row_id(q):  # a row and a path: the path holds the collector's file, or not
        return _overlap(DECLARED_FILE, q if is_row_id(p) else p)
    return p == q or any(a.startswith(b + sep) for a, b in ((p, q), (q, p)) for sep in ("/", "::"))


def _needed(row_id: str, rows: dict) -> set[str]:
    """Every row row_id needs or reads the result of, directly or through another."""
    seen, todo = set(), [row_id]
    while todo:
        r = rows.get(todo.pop())
        for n in ((*r.needs, *r.reads) if r else ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


# Cases that never share a run with others, by fault, and why (cases that cannot interact share one
# run, each judged on its own paths): the runner's own knowledge, not the catalogue's.
ALONE = {"a0-empty-store": "every token '!': a case sharing its run sees the load checks fail on the '!' "
                           "answers (SRV-SANITY)",
         "gpu-missing": "a card gone from the bus: every per-card read of its node sees 3 of 4 cards (PLAT-RAS's "
                        "error counters could not observe umc-ue-boot's node2 in every module run: wave 11)"}


def alone_because(case: dict) -> str:
    """Why a case never shares a run ('' if it may)."""
    solo = case.get("solo") or ALONE.get(case.get("fault", ""), "")
    if solo:
        return f"solo: {solo}"
    if case.get("baseline"):
        return "records a baseline"
    if case.get("output") or case.get("moved"):
        return "checks the run's output text"
    if not case.get("paths"):
        return "runs a whole selection (no paths)"
    return ""


# Tests that judge every row of an area on every node, whatever row their case is of: the survey's
# tray cells (rackgate/checks/survey: gpus, free, tuned, params, ras, ...) read each node's platform
# state whole. They are not declared checks (the inventory carries no row for them), so needs_problem()
# cannot see them: a case whose paths hold them shares with no case of that area. (params-default,
# PLAT-PARAMS on node2, failed port-held's test_tray[node2-params] and [node2-tuned] in every module
# run, costing the shared run and three more: wave 11; gpu-missing its node2 items: wave 10.)
JUDGES_AREA = {"rackgate/checks/survey": "platform"}


def compatible(a: dict, b: dict, touches: dict, rows: dict) -> str:
    """Why two cases may not share a run ('' if they may). Their selections are compared by
    plan() (selection_problem), which sees the whole group."""
    if a["row"] == b["row"]:
        return "same row"
    if rows[a["row"]].area != rows[b["row"]].area:
        # each layer runs on the one below (the fabric probes and the server run in the nodes'
        # containers): a platform fault would reach the serving checks of another case
        return "different areas"
    if any(_overlap(p, q) for p in a.get("paths", []) for q in b.get("paths", [])):
        return "shared test files"
    for x, y in ((a, b), (b, a)):
        for judge, area in JUDGES_AREA.items():
            if rows[y["row"]].area == area and any(_overlap(p, judge) for p in x.get("paths", [])):
                return f"{judge} judges every {area} row ({case_id(y)}'s {y['row']} too)"
    ta, tb = touches[a["fault"]], touches[b["fault"]]
    if any(p[:len(q)] == q or q[:len(p)] == p for p in ta for q in tb):
        return "the faults touch the same sim state"
    if a["row"] in _needed(b["row"], rows) or b["row"] in _needed(a["row"], rows):
        return "one row needs the other"
    return ""


def group_select(group: list[dict]) -> str:
    """The -m expression of a shared run: the cases' selections, or-ed."""
    selects = list(dict.fromkeys(c.get("select", "") for c in group))
    return selects[0] if len(selects) == 1 else " or ".join(f"({s})" for s in selects)


def _selected(items: list[dict], paths: list[str], expr: str) -> frozenset[str]:
    """The collected tests (rackgate.report.inventory items) in paths that `-m expr` selects."""
    from _pytest.mark.expression import Expression  # pytest's own -m evaluation

    compiled = Expression.compile(expr) if expr else None

    def picks(markers: list[str]) -> bool:
        return compiled is None or compiled.evaluate(lambda name, **kw: name in markers)

    return frozenset(it["nodeid"] for it in items if _in_paths(it["nodeid"], paths) and picks(it["markers"]))


def needs_problem(a: dict, b: dict, rows: dict, items: list[dict] | None) -> str:
    """Why b's tests could be "not run" because of a's failures ('' if they cannot): a row of a
    test in b's paths needs (catalogue `needs`, transitively) a row a fails: a's own, or the row
    of a test a also expects to fail (read from the suite's collected checks)."""
    if items is None:
        return ""
    row_of = {it["nodeid"]: it["row"] for it in items}
    fails = {a["row"]} | {row_of[t] for t in [*a.get("fail", []), *a.get("also_fail", [])] if row_of.get(t)}
    if fails & set(SERVER_ROOTS):  # every check on the server needs these (not_run_after_a_failure)
        for it in items:
            if _in_paths(it["nodeid"], b["paths"]) and {"serving", "gate", "accuracy"} & set(it["markers"]):
                return f"{it['nodeid']} runs on the server, which {case_id(a)} stops ({', '.join(sorted(fails))})"
    for it in items:
        if it["row"] and _in_paths(it["nodeid"], b["paths"]) and _needed(it["row"], rows) & fails:
            return f"{it['nodeid']} ({it['row']}) needs a row {case_id(a)} fails"
    # a's fault may reach the rows a's own checks stand on (its solo run does not run them): where
    # b's part runs one, a failure there is b's unexpected one and a's checks are "not run"
    # (stream-drop-first failed SRV-SANITY in a partner's part: wave 10)
    under = set().union(*(_needed(row_of[t], rows) for t in [*a.get("fail", []), *a.get("also_fail", [])]
                          if row_of.get(t))) | _needed(a["row"], rows)
    for it in items:
        if it["row"] in under and _in_paths(it["nodeid"], b["paths"]) and not _in_paths(it["nodeid"], a["paths"]):
            return f"{it['nodeid']} ({it['row']}) is a row {case_id(a)}'s checks need, which its fault may reach"
    return ""


def selection_problem(group: list[dict], items: list[dict] | None) -> str:
    """Why the cases' selections cannot be or-ed into one run ('' if they can): each case's part
    of the shared run must be exactly what its own selection picks from its paths, read from the
    suite's collected markers (items; None: only equal selections share)."""
    expr = group_select(group)
    if all(c.get("select", "") == expr for c in group):
        return ""
    if items is None or any(not c.get("select") for c in group):
        return "different selections"
    for c in group:
        own = _selected(items, c["paths"], c["select"])
        if not own or own != _selected(items, c["paths"], expr):
            return f"{case_id(c)}: -m {expr!r} selects other tests in its paths than -m {c['select']!r}"
    return ""


MAX_GROUP = 8  # a mismatch re-runs every case of the group alone: bound what it can cost


def plan(cases: list[dict], touches: dict, rows: dict, solo: bool = False,
         items: list[dict] | None = None) -> list[list[dict]]:
    """The suite runs for the cases: groups of cases that may share one run (every pair may
    share(), the group's selections or-able, at most MAX_GROUP), each case in exactly one group;
    the groups and their cases in the cases' order. Packed most constrained first (DSatur: next
    the case that the fewest groups so far can take, then the one with the fewest partners; into
    the largest group that takes it): first fit in the cases' order left cases alone that a
    different packing shares (the shipped matrix, wave 10: 69 runs first fit, 67 so)."""
    sharing = [i for i, c in enumerate(cases) if not solo and not alone_because(c)]
    pair: dict[tuple[int, int], bool] = {}

    def ok(i: int, j: int) -> bool:
        key = (min(i, j), max(i, j))
        if key not in pair:
            pair[key] = may_share(cases[i], cases[j], touches, rows, items)
        return pair[key]

    def takes(g: list[int], i: int) -> bool:
        return len(g) < MAX_GROUP and all(ok(i, j) for j in g)

    partners = {i: sum(ok(i, j) for j in sharing if j != i) for i in sharing}
    groups: list[list[int]] = []
    left = set(sharing)
    while left:
        i = max(left, key=lambda i: (sum(not takes(g, i) for g in groups), -partners[i], -i))
        left.remove(i)
        fit = [g for g in groups if takes(g, i) and not selection_problem([cases[k] for k in (*g, i)], items)]
        if fit:
            max(fit, key=len).append(i)
        else:
            groups.append([i])
    groups += [[i] for i, _ in enumerate(cases) if i not in set(sharing)]
    return [[cases[i] for i in sorted(g)] for g in sorted(groups, key=min)]


def may_share(a: dict, b: dict, touches: dict, rows: dict, items: list[dict] | None) -> bool:
    """Whether two cases may be in one shared run: compatible(), no dependency either way
    (needs_problem()), their selections or-able (selection_problem())."""
    return (not compatible(a, b, touches, rows) and not needs_problem(a, b, rows, items)
            and not needs_problem(b, a, rows, items) and not selection_problem([a, b], items))


def group_args(group: list[dict]) -> list[str]:
    if len(group) == 1:
        return suite_args(group[0])
    paths = list(dict.fromkeys(p for c in group for p in c["paths"]))
    args = paths + (["-m", group_select(group)] if group_select(group) else [])
    for c in group:
        args += ["--sim-fault", c["fault"]]
    return args


def group_name(group: list[dict]) -> str:
    return "+".join(case_id(c) for c in group)


# --- the runs --------------------------------------------------------------------------------


class Verdict:
    """A case's judgment: its problems, the run they were read from, and how it was run."""

    def __init__(self, problems: list[str], run: SuiteRun, how: str):
        self.problems, self.run, self.how = problems, run, how


class Runs:
    """Every run the matrix needs, started at once on a pool of JOBS; each test waits on its own.
    Grouped cases wait on their group's run; on any mismatch every case of the group is re-run
    alone (verdict())."""

    def __init__(self, cases: list[dict], jobs: int = JOBS, solo: bool = SOLO, rows: dict | None = None,
                 touches: dict | None = None, items: list[dict] | None = None, runner=None, group_runner=None,
                 reference_runner=None):
        from rackgate.catalogue import rows as catalogue_rows
        self._dir = Path(tempfile.mkdtemp(prefix="rackgate-matrix-"))
        self._pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="matrix")
        # Solo re-runs go ahead of the runs still queued (a test is waiting on them).
        self._rerun_pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="matrix-rerun")
        self._futures: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._rows = rows if rows is not None else catalogue_rows()
        self._cases = {case_id(c): c for c in cases}
        touches = touches if touches is not None else ({} if solo else fault_touches([c["fault"] for c in cases]))
        if items is None and not solo:
            from rackgate.report.inventory import collect
            items = collect()  # the suite's markers, for or-ing selections (cached per process)
        self.groups = plan(cases, touches, self._rows, solo=solo, items=items)
        self._group_of = {case_id(c): g for g in self.groups for c in g}
        self._judged: dict[str, tuple[dict, list[str]]] = {}
        # A shared run that differed: the cases re-run alone, and those shared again (split()).
        self._split: dict[str, tuple[list[dict], list[dict]]] = {}
        self._again: set[str] = set()  # groups that are already a second shared run: never split again
        self._run = runner or run_case
        self._run_shared = group_runner or run_group
        # The healthy reference (one recording for every case whose baseline is test paths), on a
        # pool of its own: the cases that need it are queued on the main pool once it is recorded.
        self._solo, self._items = solo, items or []
        self._record_reference = reference_runner or record_reference
        self._reference_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="matrix-reference")
        self._reference: Future | None = None
        self._sharing = [] if solo else [c for c in cases if reference_paths(c)]
        self.reruns: list[str] = []  # one line per shared run that differed, for the session's report
        self.started: list[list[dict]] = []  # the case runs (groups) asked for, in order

    def start(self, names: list[str]) -> None:
        """Start the runs these names need, the costliest first (the healthy run, then the runs
        that boot a server), so that the cheap ones fill the pool's last minutes."""
        todo: dict[str, list[dict] | None] = {}
        named = {n for n in names if n != HEALTHY}
        self._sharing = [c for c in self._sharing if case_id(c) in named]  # record only what is asked
        for name in names:
            key = name if name == HEALTHY else group_name(self._group_of[name])
            todo.setdefault(key, None if name == HEALTHY else self._group_of[name])
        for key, group in sorted(todo.items(), key=lambda kv: -run_cost(kv[1])):
            self._future(key, group)

    def _future(self, key: str, group: list[dict] | None, rerun: bool = False) -> Future:
        with self._lock:
            fut = self._futures.get(key)
            if fut is None:
                workdir = self._dir / re.sub(r"[^\w.-]", "_", key)[:120]
                pool = self._rerun_pool if rerun else self._pool
                if group is not None and not rerun:
                    self.started.append(group)
                if group is None:
                    fut = pool.submit(self._run, None, workdir)
                elif len(group) == 1 and not self._solo and reference_paths(group[0]):
                    fut = self._after_reference(group[0], workdir, pool)
                elif len(group) == 1:
                    fut = pool.submit(self._run, group[0], workdir)
                else:
                    fut = pool.submit(self._run_group, group, workdir)
                self._futures[key] = fut
        return fut

    def _after_reference(self, case: dict, workdir: Path, pool: ThreadPoolExecutor) -> Future:
        """A case's run, queued on the pool once the healthy reference is recorded (so that it
        waits off the pool, not on one of its workers). Called with the lock held."""
        if self._reference is None:
            sharing = self._sharing if any(c is case for c in self._sharing) else [*self._sharing, case]
            self._reference = self._reference_pool.submit(self._record_reference, sharing,
                                                          self._dir / "healthy_reference")
        out: Future = Future()

        def done(inner: Future) -> None:
            if inner.cancelled():
                out.cancel()
            elif inner.exception() is not None:
                out.set_exception(inner.exception())
            else:
                out.set_result(inner.result())

        def queue(ref: Future) -> None:
            try:
                pool.submit(self._run_on_reference, case, workdir, ref.result()).add_done_callback(done)
            except Exception as e:  # noqa: BLE001 - the recording raised or was cancelled, or the pool closed: the test says so
                out.set_exception(e)
        self._reference.add_done_callback(queue)
        return out

    def _run_on_reference(self, case: dict, workdir: Path, recorded: tuple[SuiteRun, Path]) -> SuiteRun:
        rec, reference = recorded
        if rec.rc != 0 or not reference.exists():
            return rec  # the case's verdict: no results, and the recording's failure in its stderr
        return self._run(case, workdir, baseline=own_baseline(reference, case, self._items, workdir / "baseline.json"))

    def _run_group(self, group: list[dict], workdir: Path) -> SuiteRun:
        run = self._run_shared(group, workdir)
        self._judge(group, run)  # a difference queues the solo re-runs now, not when a test asks
        return run

    def _judge(self, group: list[dict], run: SuiteRun) -> tuple[dict, list[str]]:
        """The shared run judged once (judge_group); on any difference the cases it implicates are
        queued alone and the others once more as one shared run (split()), ahead of the runs still
        waiting."""
        key = group_name(group)
        with self._lock:
            if key not in self._judged:
                self._judged[key] = judge_group(group, run, self._rows)
                by_case, whole = self._judged[key]
                if whole or any(by_case.values()):
                    alone, again = split(group, run, by_case, whole, again_allowed=key not in self._again)
                    self._split[key] = (alone, again)
                    if again:
                        self._again.add(group_name(again))
                    first = (whole + [f"{n}: {p}" for n, ps in by_case.items() for p in ps])[0]
                    self.reruns.append(f"{key}: the shared run differed ({first[:300]}); re-run alone: "
                                       f"{', '.join(case_id(c) for c in alone)}"
                                       + (f"; shared again: {group_name(again)}" if again else ""))
            by_case, whole = self._judged[key]
            alone, again = self._split.get(key, ([], []))
        for c in alone:
            self._future(case_id(c), [c], rerun=True)
        if again:
            self._future(group_name(again), again, rerun=True)
        return by_case, whole

    def get(self, name: str, wait: bool = True) -> SuiteRun | None:
        """A solo run: the healthy rack's, or one case's alone."""
        fut = self._future(name, None if name == HEALTHY else [self._cases[name]])
        return fut.result() if wait else None

    def verdict(self, name: str) -> Verdict:
        case = self._cases[name]
        group = self._group_of[name]
        if len(group) == 1:
            run = self.get(name)
            return Verdict(judge_case(case, run, self._rows[case["row"]]), run, "its own run")
        return self._verdict_in(case, group, "")

    def _verdict_in(self, case: dict, group: list[dict], before: str) -> Verdict:
        """The case's verdict from its group's shared run; where that run differed, from its solo
        re-run or the shared run of the cases the difference did not implicate (split())."""
        name = case_id(case)
        run = self._future(group_name(group), group, rerun=bool(before)).result()
        by_case, whole = self._judge(group, run)
        others = ", ".join(case_id(c) for c in group if c is not case)
        if not whole and not any(by_case.values()):
            return Verdict([], own_part(run, case), f"one run shared with {others}{before}")
        first = (whole + [f"{n}: {p}" for n, ps in by_case.items() for p in ps])[0]
        why = f"the run shared with {others} differed ({first[:300]})"
        _alone, again = self._split[group_name(group)]
        if any(c is case for c in again):
            return self._verdict_in(case, again, f"{before}; shared again: {why}")
        solo = self._future(name, [case], rerun=True).result()
        return Verdict(judge_case(case, solo, self._rows[case["row"]]), solo, f"re-run alone{before}: {why}")

    def close(self) -> None:
        """Every run ended, its files removed (RACKGATE_KEEP_MATRIX=1 keeps them to look at)."""
        self._reference_pool.shutdown(wait=True, cancel_futures=True)  # first: it queues on the pool
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._rerun_pool.shutdown(wait=True, cancel_futures=True)
        if os.environ.get("RACKGATE_KEEP_MATRIX") != "1":
            shutil.rmtree(self._dir, ignore_errors=True)


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
            if not (re.fullmatch(r"rackgate/checks/[\w/]+\.py::\w+(\[[^\]]+\])?", tid) or (is_row_id(tid) and "::" in tid)):
                problems.append(f"{where}: {tid!r} is not a test id (ROW::<place> or rackgate/checks/<file>.py::<name>[<param>])")
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
    return problems + verdict_problems(run, None)


# Rows every check on the server needs (a failure of one makes those checks "not run").
SERVER_ROOTS = ("SRV-BOOT", "SRV-MODELS", "SRV-ALIVE")
NOT_RUN = re.compile(r"not run: ([A-Z]+-[A-Z0-9-]+) ")


def not_run_after_a_failure(message: str, run: SuiteRun) -> bool:
    """An ERROR "not run: ROW ..." (rackgate.errors.NotRun) whose ROW did fail in this run (a
    verdict message starts with its row id, or a failed one says it is ROW's signature too: a hang
    the asking row reported, recorded for SRV-DEADLOCK as well)."""
    m = NOT_RUN.search(message or "")
    if not m:
        return False
    root = m.group(1)
    return any(o.status in ("failed", "error") and ((o.message or "").lstrip().startswith(root)
                                                    or o.status == "failed" and f"({root}'s signature" in o.message)
               for o in run.outcomes.values()) or root in SERVER_ROOTS


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
    problems += moved_problems(case.get("moved", []), run.stdout)
    if expected and run.rc != 1:
        problems.append(f"the suite exited {run.rc}, not 1 (tests failed)")
    if not expected and run.rc != 0:
        problems.append(f"the suite exited {run.rc}, not 0")
    return problems + verdict_problems(run, row.id if fail else "")


def regressed_rows(stdout: str) -> list[tuple[str, str, str, str]]:
    """(fact, where, old, new) of every REGRESSED row of the old -> new tables in a run's output
    (rackgate.baseline.compare.table: columns two spaces apart; the unit after the new value)."""
    rows = []
    for line in stdout.splitlines():
        cols = re.split(r"\s{2,}", line.strip())
        if len(cols) == 6 and cols[-1] == "REGRESSED" and " -> " in cols[2]:
            old, _, new = cols[2].partition(" -> ")
            rows.append((cols[0], cols[1], old, new))
    return rows


def _number(text: str) -> float | None:
    try:
        return float(text.split(" ")[0])
    except ValueError:
        return None


def moved_problems(moved: list[dict], stdout: str) -> list[str]:
    """Each `moved` fact shows a REGRESSED row (beyond its tolerance) that moved its way: the
    verdict and the evidence's shape, whatever figures load or sampling gave this run."""
    problems, rows = [], regressed_rows(stdout)
    for m in moved:
        mine = [r for r in rows if r[0] == m["fact"] and (not m.get("where") or r[1] == m["where"])]
        if not mine:
            problems.append(f"no REGRESSED row for {m['fact']}{' at ' + m['where'] if m.get('where') else ''} "
                            "in the run's old -> new table")
            continue
        for _fact, where, old, new in mine:
            a, b = _number(old), _number(new)
            ok = {"changed": old != new, "down": a is not None and b is not None and b < a,
                  "up": a is not None and b is not None and b > a}[m["direction"]]
            if not ok:
                problems.append(f"{m['fact']} ({where}): {old} -> {new} did not move {m['direction']}")
    return problems


# --- judging a shared run --------------------------------------------------------------------


def _in_paths(tid: str, paths: list[str]) -> bool:
    return _in_tuple(tid, tuple(paths))


@functools.lru_cache(maxsize=1 << 16)
def _in_tuple(tid: str, paths: tuple[str, ...]) -> bool:
    """_in_paths, remembered: the plan asks it for every collected test, every pair of cases
    (~1.5 CPU s of the module's process uncached: wave 11)."""
    if is_row_id(tid):  # a declared check's item: in its row, in the collector's file
        return any(_overlap(tid, p) for p in paths)
    file, function = tid.split("::", 1)[0], tid.split("[", 1)[0]
    return any(_overlap(function if "::" in p else file, p) for p in paths)


def own_part(run: SuiteRun, case: dict) -> SuiteRun:
    """The part of a shared run that is the case's: its paths' tests, and the exit status a run
    of only those would have had (1 if one failed, else 0; any other status as it was)."""
    outcomes = {t: o for t, o in run.outcomes.items() if _in_paths(t, case["paths"])}
    failed = any(o.status in ("failed", "error") for o in outcomes.values())
    rc = run.rc if run.rc not in (0, 1) else int(failed)
    return SuiteRun(rc, run.stdout, run.stderr, outcomes, run.verdict, run.verdict_problem)


def verdict_problems(run: SuiteRun, row_id: str | None) -> list[str]:
    """verdict.json is on its schema, and a case's row is among its findings (row_id None: the
    healthy rack, whose verdict has no finding; "": a case that expects no FAILED, schema only)."""
    if run.verdict_problem:
        return [f"verdict.json: {run.verdict_problem}"]
    if run.verdict is None:
        return []
    rows = {f["row"] for n in run.verdict["nodes"] for f in n["findings"]} | {f["row"] for f in run.verdict["rack_findings"]}
    if row_id is None and rows:
        return [f"verdict.json names findings on the healthy rack: {sorted(rows)}"]
    if row_id and row_id not in rows:
        return [f"verdict.json has no {row_id} finding (its findings: {sorted(rows) or 'none'})"]
    return []


def judge_group(group: list[dict], run: SuiteRun, rows: dict) -> tuple[dict[str, list[str]], list[str]]:
    """A shared run judged for each case on its own part (judge_case), plus what sharing must not
    hide: a failure in one case's tests that carries another case's row, a test "not run"
    because of another case's row, and any failure outside every case's paths.
    Returns ({case id: problems}, problems of the run as a whole)."""
    whole = []
    if not run.outcomes:
        whole.append(f"the shared run produced no test results (rc {run.rc}): {run.stderr.strip()[-400:]}")
    if run.rc not in (0, 1):
        whole.append(f"the shared run exited {run.rc}: {run.stderr.strip()[-400:]}")
    for tid, o in sorted(run.outcomes.items()):
        if o.status in ("failed", "error") and not any(_in_paths(tid, c["paths"]) for c in group):
            whole.append(f"{tid}: {o.status} outside every case's paths: {_first_line(o.message)}")
    by_case = {}
    for case in group:
        mine = own_part(run, case)
        problems = judge_case(case, mine, rows[case["row"]]) if run.outcomes else []
        others = {c["row"]: case_id(c) for c in group if c is not case}
        for tid, o in sorted(mine.outcomes.items()):
            if o.status not in ("failed", "error"):
                continue
            m, nr = VERDICT.search(o.message or ""), NOT_RUN.search(o.message or "")
            if m and m.group(1) in others:
                problems.append(f"{tid}: carries {m.group(1)}, the row of {others[m.group(1)]} (shared run)")
            if nr and nr.group(1) in others:
                problems.append(f"{tid}: not run because {nr.group(1)} ({others[nr.group(1)]}) failed (shared run)")
        by_case[case_id(case)] = problems
    return by_case, whole


def split(group: list[dict], run: SuiteRun, by_case: dict[str, list[str]], whole: list[str],
          again_allowed: bool = True) -> tuple[list[dict], list[dict]]:
    """A shared run that differed, split for its re-runs: (the cases to re-run alone, the cases to
    share one run again). Alone: every case whose part differed, and every case whose row a failure
    in another case's part carries or was "not run" for (the fault that reached across). The
    others share a run again, judged as strictly (judge_group); where the first run differed as a
    whole (a failure outside every case's paths, a broken run), where fewer than two are left, or
    where the group is already a second shared run, every case is re-run alone."""
    if whole or not again_allowed:
        return list(group), []
    implicated = {n for n, ps in by_case.items() if ps}
    row_of = {c["row"]: case_id(c) for c in group}
    for case in group:
        for o in own_part(run, case).outcomes.values():
            if o.status in ("failed", "error"):
                for m in (VERDICT.search(o.message or ""), NOT_RUN.search(o.message or "")):
                    if m and m.group(1) in row_of and row_of[m.group(1)] != case_id(case):
                        implicated.add(row_of[m.group(1)])
    again = [c for c in group if case_id(c) not in implicated]
    if len(again) < 2:
        return list(group), []
    return [c for c in group if case_id(c) in implicated], again
