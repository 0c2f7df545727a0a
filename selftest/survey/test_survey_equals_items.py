"""The survey and the pytest items judge alike (one judge per row, in rackgate/gates/): on the
18-tray sim (racks/sim18.toml, its own mixed faults cleared), every per-tray sim fault of a row the
survey has a cell for is injected on a tray of its own; `rackgate survey` (its API, run.survey)
and, in one suite run, the row's own pytest items and `pytest -m survey`'s items must give the same
verdict for every tray and every survey row (PASS/FAIL/UNOBSERVED <-> passed/failed/error), and the
faulted tray is named (not PASS) by both wherever the fault matrix says the fault fails its row.

The faults come from the sim's fault table (target node or gpu, row in survey/model.py CHECKS),
never a hand list; the others are out of scope and test_scope names them. Faults share a run, one
tray each; a fault that makes its tray unreachable (it changes the node's `reach`, read from the
fault's effect on the state) gets a run of its own, since a rack-wide item (FAB-POD) cannot judge
a rack with a tray it cannot see and would hide another fault's FAB-POD verdict; that run is on the
first ALONE_TRAYS trays of the rack (healthy trays on both sides of the faulted one): the shared run
already compares the healthy trays of all 18, and a tray more or less changes no verdict of
another tray, only what a run of 18 costs (its checks, two sims). FAB-POD is the
rack's question for the item (the odd trays fail) and the tray's for the survey (its cards agree;
another domain is the pick's reason): the survey's rack-wide answer is the same judge,
gates/fabric.py pod_outliers, over the trays' domains."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from rackgate import config
from rackgate.faultmatrix import cases as matrix_cases
from rackgate.gates import fabric as fab_judge
from rackgate.ids import SERVER, check_of, place_of
from rackgate.report.inventory import checks_by_row, collect
from rackgate.sim import faults as sim_faults
from rackgate.sim.rack import build, override
from rackgate.survey import run
from rackgate.survey.model import CHECKS, FAIL, PASS, UNOBSERVED, TrayReport

from ..harness import REPO, SuiteRun, run_suite
from ..matrix import fault_touches

pytestmark = pytest.mark.suite

RACK18 = REPO / "racks" / "sim18.toml"
ALONE_TRAYS = 4   # a run of its own (an unreachable tray): node1 healthy, the fault on node2, two more
ROW_CELL = {row: key for key, row, _ in CHECKS if row}
STATUS = {"passed": PASS, "failed": FAIL, "error": UNOBSERVED}
# A verdict's where: "FAB-POD [node13,node14] ..." (rackgate.report.verdict.message)
WHERE = re.compile(r"\b[A-Z]+-[A-Z0-9-]+ \[([^\]]+)\]")
Verdicts = dict[tuple[str, str], str]   # (tray, row) -> PASS / FAIL / UNOBSERVED


def _scope() -> tuple[list[sim_faults.Fault], list[sim_faults.Fault]]:
    every = sorted(sim_faults.all_faults().values(), key=lambda f: f.name)
    per_tray = [f for f in every if f.target in ("node", "gpu")]
    return [f for f in per_tray if f.row in ROW_CELL], [f for f in per_tray if f.row not in ROW_CELL]


IN_SCOPE, OUT_OF_SCOPE = _scope()


def _groups(faults: list[sim_faults.Fault], trays: int) -> list[tuple[list[str], int]]:
    """Fault specs per run, one tray each (node1 stays healthy), and the run's trays; unreachable-making
    faults alone, on ALONE_TRAYS trays."""
    touches = fault_touches([f.name for f in faults])
    alone = [f for f in faults if any("reach" in path for path in touches[f.name])]
    shared = [f for f in faults if f not in alone]
    out: list[tuple[list[str], int]] = []
    batches = [(shared[i:i + trays - 1], trays) for i in range(0, len(shared), trays - 1)]
    for batch, n in batches + [([f], min(ALONE_TRAYS, trays)) for f in alone]:
        specs = []
        for i, f in enumerate(batch, start=2):
            gpu = f.default.partition(":")[2] or "0"
            specs.append(f"{f.name}@node{i}" + (f":{gpu}" if f.target == "gpu" else ""))
        out.append((specs, n))
    return out


def _row_items() -> dict[str, list[str]]:
    """Row -> its pytest items' functions, outside the survey's own (found by their row marker)."""
    by_row = checks_by_row(collect())
    return {row: [fn for fn in by_row.get(row, []) if "/survey/" not in fn] for row in ROW_CELL}


def _survey_api(rack18: config.Rack, specs: list[str], workdir: Path) -> list[TrayReport]:
    sim = build(rack18, specs, workdir=str(workdir))
    try:
        return run.survey(sim.rack)
    finally:
        sim.stop()


def _suite(rack_file: Path, specs: list[str], items: list[str], workdir: Path) -> SuiteRun:
    args = [a for s in specs for a in ("--sim-fault", s)]
    return run_suite(workdir, "--rack", str(rack_file), "-m", "survey or platform or fabric",
                     "rackgate/checks/survey/test_survey.py::test_tray", *items, *args, timeout=500)


def _item_verdicts(suite: SuiteRun, items: dict[str, list[str]], nodes: list[str]) -> Verdicts:
    """(tray, row) -> the worst verdict of the row's items on that tray: a node item counts for its
    node, a GPU item for its GPU's node; a rack-wide item for the trays its verdict names (FAIL:
    the trays in its [where], the others PASS; could-not-observe: the trays it says it did not
    see, the others not judged)."""
    worst: dict[tuple[str, str], str] = {}
    rank = {PASS: 0, UNOBSERVED: 1, FAIL: 2}

    def put(node: str, row: str, v: str) -> None:
        if rank[v] >= rank[worst.get((node, row), PASS)]:
            worst[(node, row)] = v

    for row, fns in items.items():
        for fn in fns:
            mine = {k: o for k, o in suite.outcomes.items() if check_of(k) == fn}
            assert mine, f"{fn} ({row}) did not run:\n{suite.stdout[-2000:]}"
            for k, o in mine.items():
                v = STATUS[o.status]
                if place_of(k) not in ("", SERVER):
                    put(place_of(k).split("-", 1)[0], row, v)
                elif v == FAIL:
                    m = WHERE.search(o.message)
                    named = set(m.group(1).split(",")) if m else set()
                    for n in nodes:
                        put(n, row, FAIL if n in named else PASS)
                elif v == UNOBSERVED:
                    unseen = " ".join(re.findall(r"not seen: ([^|\n]*)", o.message))
                    for n in nodes:
                        if re.search(rf"\b{n}\b", unseen):
                            put(n, row, UNOBSERVED)
                else:
                    for n in nodes:
                        put(n, row, PASS)
    return worst


def _survey_verdicts(reports: list[TrayReport]) -> Verdicts:
    """(tray, row) -> the survey's verdict: the row's cell (an unreachable tray has none: could
    not observe); FAB-POD also fails a tray outside the rack's domain (pod_outliers)."""
    out: Verdicts = {}
    domains = {r.node: r.domain for r in reports if r.domain is not None}
    odd = fab_judge.pod_outliers(domains)[1] if domains else []
    outside = {o.split(" ", 1)[0] for o in odd}
    for r in reports:
        for row, key in ROW_CELL.items():
            c = r.cells.get(key)
            v = UNOBSERVED if c is None else c.status
            if row == "FAB-POD" and v == PASS and r.node in outside:
                v = FAIL
            out[(r.node, row)] = v
    return out


@dataclass
class Group:
    """One run: its faults, the survey's and the items' verdicts per (tray, row), the suite run."""
    specs: list[str]
    survey: Verdicts
    items: Verdicts
    suite: SuiteRun


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> list[Group]:
    """Every group of faults, run (two at a time) and read."""
    rack18 = override(config.load(RACK18), "sim.faults", [])
    base = tmp_path_factory.mktemp("eq")
    # the shipped 18-tray rack without its own faults (and cut to the first ALONE_TRAYS trays)
    clean = re.sub(r"(?ms)^faults = \[.*?\]\n", "faults = []\n", RACK18.read_text())
    items = _row_items()
    assert rack18.sim is not None
    trays = rack18.sim.nodes
    groups = _groups(IN_SCOPE, trays)

    def one(i: int, specs: list[str], n: int) -> tuple[list[str], list[TrayReport], SuiteRun, list[str]]:
        wd = base / f"g{i}"
        wd.mkdir()
        rack_file = wd / f"sim{n}-clean.toml"
        rack_file.write_text(re.sub(r"(?m)^nodes = \d+$", f"nodes = {n}", clean))
        written = config.load(rack_file).sim
        assert written is not None and written.faults == [] and written.nodes == n
        suite = _suite(rack_file, specs, [fn for fns in items.values() for fn in fns], wd / "suite")
        reports = _survey_api(override(rack18, "sim.nodes", n), specs, wd / "sim")
        assert [r.node for r in reports] == [f"node{k}" for k in range(1, n + 1)]   # the sim's names
        return specs, reports, suite, [r.node for r in reports]

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda a: one(a[0], *a[1]), enumerate(groups)))
    return [Group(specs, _survey_verdicts(reports), _item_verdicts(suite, items, nodes), suite)
            for specs, reports, suite, nodes in done]


def test_scope() -> None:
    """Every survey row is proven by at least one fault; the per-tray faults of other rows are
    out of scope (named here, and in the test's report)."""
    rows = {f.row for f in IN_SCOPE}
    assert rows == set(ROW_CELL), f"survey rows without a per-tray sim fault: {set(ROW_CELL) - rows}"
    print("out of scope (their row has no survey cell): "
          + ", ".join(f"{f.name} ({f.row})" for f in OUT_OF_SCOPE))


@pytest.mark.timeout(1200)
def test_survey_and_items_agree_on_every_tray_and_row(verdicts: list[Group]) -> None:
    diffs = []
    for g in verdicts:
        specs, survey, items = g.specs, g.survey, g.items
        for (node, row), v in sorted(survey.items()):
            got = items.get((node, row))
            if got is not None and got != v:
                diffs.append(f"[{', '.join(specs)}] {node} {row}: survey {v}, items {got}")
        judged = {k for k in items}
        missing = {(n, r) for (n, r) in survey if (n, r) not in judged and r != "FAB-POD"}
        assert not missing, f"rows with no item verdict: {sorted(missing)}"
    assert not diffs, "\n".join(diffs)


@pytest.mark.timeout(1200)
def test_pytest_m_survey_items_are_the_survey_cells(verdicts: list[Group]) -> None:
    """`pytest -m survey`'s per-tray items (another process, another sim) give the API's cells."""
    diffs = []
    for g in verdicts:
        specs, survey, suite = g.specs, g.survey, g.suite
        for k, o in suite.outcomes.items():
            m = re.search(r"test_survey\.py::test_tray\[(\w+)-(\w+)\]", k)
            if not m:
                continue
            row = next(r for r, key in ROW_CELL.items() if key == m.group(2))
            if STATUS[o.status] != survey[(m.group(1), row)]:
                diffs.append(f"[{', '.join(specs)}] {k}: {o.status}, the API's cell {survey[(m.group(1), row)]}")
    assert not diffs, "\n".join(diffs)


@pytest.mark.timeout(1200)
def test_the_faulted_tray_is_named(verdicts: list[Group]) -> None:
    """Each fault's tray, on its row: not PASS on both sides where the fault matrix says the fault
    fails something; PASS on both where the matrix says it fails nothing (a healthy variant)."""
    expects: dict[str, bool] = {}
    for case in matrix_cases():  # the explicit cases and those derived from declared checks
        name = case["fault"].partition("@")[0]
        expects[name] = expects.get(name, False) or bool(case.get("fail") or case.get("also_fail"))
    problems = []
    for g in verdicts:
        specs, survey, items = g.specs, g.survey, g.items
        for spec in specs:
            name, _, place = spec.partition("@")
            node, row = place.partition(":")[0], sim_faults.get(name).row
            both = (survey[(node, row)], items.get((node, row)))
            if expects.get(name) and PASS in both:
                problems.append(f"{spec} ({row}): survey {both[0]}, items {both[1]}: the faulted tray is not named")
            if not expects.get(name) and both != (PASS, PASS):
                problems.append(f"{spec} ({row}, healthy variant): survey {both[0]}, items {both[1]}")
    assert not problems, "\n".join(problems)
