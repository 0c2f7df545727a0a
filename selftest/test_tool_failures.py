"""Every command the suite sends in its platform and fabric checks, failing every way
(rackgate.transport.inject): each item that sent a failed command is could-not-observe naming the
node -- never PASSED, never FAILED, never a Python exception. The commands are discovered from a
healthy run, so a new probe is covered without editing this test.

Few runs: a failure is aimed at one check on one node (`TOOL@CHECK`), and each run fails one
(command, way) in every check of every node (Planner). What a run did not reach is planned again."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from rackgate.transport.inject import WAYS

from .harness import run_suite

SELECTION = ("-m", "platform or fabric", "-p", "no:xdist")
INTERNAL = "rackgate internal error"
MAX_RUNS = 12


def _run(tmp_path, name: str, fail: dict[str, dict[str, str]]):
    log, plan = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.plan.json"
    plan.write_text(json.dumps({"log": str(log), "fail": fail}))
    run = run_suite(tmp_path / name, *SELECTION, env={"RACKGATE_INJECT": str(plan)}, timeout=600)
    sent = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return run, sent


def check_of(test: str) -> str:
    return test.split("[", 1)[0]


class Planner:
    """Which (command, way) each node fails in the next run, from the healthy run's log: on every
    node, one command of each check (`TOOL@CHECK`), so no planned failure hides another inside an
    item. A failure that ends more than its check (the node's reachability command fails, and the
    node is unreachable for the rest of the run; a shared reading fails for every check that uses
    it) can hide the others on its node: those are not logged as sent, and go into the next run."""

    def __init__(self, sent: list[dict]):
        self.nodes = sorted({s["node"] for s in sent})
        self.by_check: dict[str, set[str]] = defaultdict(set)
        for s in sent:
            if s["test"]:
                self.by_check[check_of(s["test"])].add(s["tool"])
        self.tools = sorted({s["tool"] for s in sent})
        self.left = {(t, w) for t in self.tools for w in WAYS}

    def next_plan(self) -> dict[str, dict[str, str]]:
        # the (command, way) pairs with the fewest checks to carry them first
        rest = sorted(self.left, key=lambda p: (sum(p[0] in t for t in self.by_check.values()), p))
        plan: dict[str, dict[str, str]] = {}
        for n in self.nodes:
            for check, tools in sorted(self.by_check.items()):
                pick = next((p for p in rest if p[0] in tools), None)
                if pick:
                    rest.remove(pick)
                    plan.setdefault(n, {})[f"{pick[0]}@{check}"] = pick[1]
        return plan

    def reached(self, got: list[dict]) -> None:
        self.left -= {(s["tool"], s["way"]) for s in got if s["way"]}


def affected(test: str, node: str, outcomes) -> set[str]:
    """The items a command failing on `node` while `test` ran must not pass: `test` itself and its
    siblings (same check, other parameters) that name the node. A reading shared by a check's
    items (a node's amd-smi for every GPU, ubench07 over every pair) is taken by whichever item
    comes first, and the log names that one."""
    func = test.split("[", 1)[0]
    return {test} | {t for t in outcomes if t.split("[", 1)[0] == func and "[" in t
                     and node in t.split("[", 1)[1].rstrip("]").split("-")}


def violations(run, sent) -> list[str]:
    """What the rule forbids in one failing run."""
    bad = [f"{t}: FAILED: {run.outcomes[t].message[:300]}" for t in sorted(run.ids("failed"))]
    bad += [f"{t}: {o.message[:300]}" for t, o in sorted(run.outcomes.items()) if INTERNAL in o.message]
    hit: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for s in sent:
        if s["way"] and s["test"]:
            for test in affected(s["test"], s["node"], run.outcomes):
                hit[test].add((s["tool"], s["way"], s["node"]))
    for test, fails in sorted(hit.items()):
        o = run.outcomes.get(test)
        if o is None:
            continue
        if o.status == "passed":
            bad.append(f"{test}: PASSED although {sorted(fails)} failed")
        elif o.status == "error" and not any(node in o.message for _, _, node in fails):
            bad.append(f"{test}: could-not-observe names no node of {sorted(fails)}: {o.message[:200]}")
    return bad


@pytest.mark.timeout(1500)
def test_every_command_failing_every_way_is_could_not_observe(tmp_path):
    healthy, sent = _run(tmp_path, "discover", {})
    assert healthy.outcomes and not healthy.ids("failed") and not healthy.ids("error"), healthy.stdout[-2000:]
    planner = Planner(sent)
    assert len(planner.tools) >= 20, planner.tools  # the platform and fabric probes' distinct commands
    assert {"ps", "dmesg"} <= set().union(*planner.by_check.values()), planner.by_check  # ubench07's
    found: list[str] = []
    for k in range(MAX_RUNS):
        plan = planner.next_plan()
        if not plan:
            break
        run, got = _run(tmp_path, f"run{k}", plan)
        assert run.outcomes, run.stdout[-2000:] + run.stderr[-2000:]
        found += [f"run {k}: {v}" for v in violations(run, got)]
        planner.reached(got)
    assert not found, f"{len(planner.tools)} commands x {len(WAYS)} ways:\n" + "\n".join(found)
    assert not planner.left, f"never reached while failing in {MAX_RUNS} runs: {sorted(planner.left)}"
