"""Every command the suite sends, failing every way (selftest/inject.py): each item that
sent a failed command is could-not-observe naming the node -- never PASSED, never FAILED, never
a Python exception. The commands are discovered from a healthy run, so a new probe is covered
without editing this test. Two selections: the platform checks, and the fabric's (the collective
probe, ubench07's pair rounds with their starts, log reads, scans and kills).

Few runs, no masking: commands that one item sends together are never failed together (the first
failure would hide the second), so the commands are coloured (greedy, by co-occurrence in an item);
each (colour x way) is a slot, and every node is a lane: a run fails one slot per node. The
commands of the session's first item (the node's reachability) are each a colour of their own.
A failing run leaves out the items the healthy run ran before it first sent a failing command
(before_first: they cannot see a failure that comes after them; the healthy run judged them)."""
from __future__ import annotations

import json
import os
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

from .harness import run_suite
from .inject import WAYS

pytestmark = pytest.mark.matrix

SELECTIONS = {"platform": ("-m", "platform", "-p", "no:xdist"), "fabric": ("-m", "fabric", "-p", "no:xdist")}
# A tool whose absence the probe answers from another source by design: PASSED is then allowed,
# but only when the item read that source in the same run (it sent a command that did not fail).
FALLBACKS = {("amd-smi", "missing"): "the driver's sysfs view (rackgate/probes/gpus.py)"}
INTERNAL = "rackgate internal error"
# Commands sent for their exit status alone (the nodes' reachability round trip, `true`): empty or
# garbage output with rc 0 is their healthy answer, so an item may pass when only that way hit them.
STATUS_ONLY = {"true"}
# Commands whose answer the transport keeps per node (transport/host.py: the login's `id -u`, asked
# once for sudo): whichever item asks first in a run pays, so in a run where it fails it is asked
# again beside any command -- a colour of its own, like the session's first item's commands (FAB-
# DATACHECK asked it first in the healthy run and the pair rounds again when it failed, before dmesg).
CACHED = {"id"}
# Commands the fabric's pair rounds send beside the tools whose output a pair item judges (they
# are logged against the pair item that ran the rounds): a pair item may pass when only these
# failed. `ps` is FAB-LEFTOVER's scan: its failure must then show on that node's FAB-LEFTOVER item
# (not passed); `kill` ends the suite's own tool, and fails the pair itself when the tool still runs.
BESIDE = {"ps": "FAB-LEFTOVER::{node}",
          'sh:kill -"$1" -"$2" 2>/dev/null': ""}
# The failing runs are independent (each its own directory, sim, plan and log) and spend much of
# their time in the sim's bounded waits (a failed tool sits until p2p_run_s/bw_run_s), so this many
# go at once: the serial chain (discovery + 18 fabric runs: 484 s) was a tail of the whole run.
JOBS = max(1, int(os.environ.get("RACKGATE_TOOL_FAILURE_JOBS", "2")))
PAIR_ITEMS = ("FAB-P2P::", "FAB-BW::")


def _run(tmp_path, name: str, fail: dict[str, dict[str, str]], selection: tuple[str, ...],
         skip: list[str] | None = None):
    log, plan = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.plan.json"
    plan.write_text(json.dumps({"log": str(log), "fail": fail}))
    run = run_suite(tmp_path / name, "-p", "selftest.inject", f"--inject-plan={plan}", *selection,
                    *(f"--deselect={t}" for t in skip or []), timeout=600)
    sent = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return run, sent


def colours(sent: list[dict]) -> list[list[str]]:
    """Commands in groups of which no item sends two (greedy colouring of co-occurrence)."""
    together: dict[str, set[str]] = defaultdict(set)
    for s in sent:
        together[s["test"]].add(s["tool"])
    tools = sorted({s["tool"] for s in sent})
    first = together[sent[0]["test"]] | (CACHED & set(tools))
    near: dict[str, set[str]] = {t: set() for t in tools}
    for group in together.values():
        for t in group:
            near[t] |= group - {t}
    for t in first:
        for u in tools:
            if u != t:
                near[t].add(u)
                near[u].add(t)
    colour: dict[str, int] = {}
    for t in sorted(tools, key=lambda t: (-len(near[t]), t)):
        used = {colour[u] for u in near[t] if u in colour}
        colour[t] = next(c for c in range(len(tools)) if c not in used)
    return [sorted(t for t in tools if colour[t] == c) for c in range(max(colour.values()) + 1)]


def before_first(order: list[str], sent: list[dict], tools: set[str]) -> list[str]:
    """The healthy run's items that ran before it first sent any of `tools` (in `order`, the items as
    they ran). They sent none of them, and nothing they did can depend on a command sent after them:
    in a run that fails only `tools` they do what they did in the healthy run, so such a run need not
    repeat them. A command sent outside an item (the session's set-up) keeps every item."""
    running = [s.get("running", "") for s in sent if s["tool"] in tools]
    if not running or "" in running or any(r not in order for r in running):
        return []
    return order[:min(order.index(r) for r in running)]


def violations(run, sent) -> list[str]:
    """What the rule forbids in one failing run."""
    bad = [f"{t}: FAILED: {run.outcomes[t].message[:300]}" for t in sorted(run.ids("failed"))]
    bad += [f"{t}: {o.message[:300]}" for t, o in sorted(run.outcomes.items()) if INTERNAL in o.message]
    hit: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    read_whole: dict[tuple[str, str], set[str]] = defaultdict(set)  # (test, node) -> tools that answered
    for s in sent:
        if s["way"] and s["test"]:
            hit[s["test"]].add((s["tool"], s["way"], s["node"]))
        elif s["test"]:
            read_whole[s["test"], s["node"]].add(s["tool"])
    for test, fails in sorted(hit.items()):
        o = run.outcomes.get(test)
        if o is None:
            continue
        if o.status == "passed" and all((tool, way) in FALLBACKS and read_whole[test, node]
                                        for tool, way, node in fails):
            continue  # the designed fallback was read instead
        if o.status == "passed" and all(tool in STATUS_ONLY and way in ("empty", "garbage") for tool, way, _ in fails):
            continue  # rc 0 is all such a command answers: nothing failed
        if o.status == "passed" and test.startswith(PAIR_ITEMS) and all(
                tool in BESIDE and (not BESIDE[tool] or _not_passed(run, BESIDE[tool].format(node=node)))
                for tool, _, node in fails):
            continue  # only commands beside the pair's own tools failed, and showed where they belong
        if o.status == "passed":
            bad.append(f"{test}: PASSED although {sorted(fails)} failed")
        elif o.status == "error" and not any(node in o.message for _, _, node in fails):
            bad.append(f"{test}: could-not-observe names no node of {sorted(fails)}: {o.message[:200]}")
    return bad


def _not_passed(run, test: str) -> bool:
    o = run.outcomes.get(test)
    return o is not None and o.status != "passed"


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("area", [  # each its own xdist group: the two run side by side
    pytest.param(a, marks=pytest.mark.xdist_group(f"tool_failures_{a}")) for a in sorted(SELECTIONS)])
def test_every_command_failing_every_way_is_could_not_observe(tmp_path, area):
    selection = SELECTIONS[area]
    healthy, sent = _run(tmp_path, "discover", {}, selection)
    assert healthy.outcomes and not healthy.ids("failed") and not healthy.ids("error"), healthy.stdout[-2000:]
    nodes = sorted({s["node"] for s in sent})
    groups = colours(sent)
    tools = sorted(t for g in groups for t in g)
    assert len(tools) >= 10, tools  # each selection's probes send a dozen distinct commands or more
    slots = [(g, way) for g in groups for way in WAYS]
    found: list[str] = []
    covered: set[tuple[str, str]] = set()
    plans = [{n: {t: way for t in g} for n, (g, way) in zip(nodes, slots[k * len(nodes):(k + 1) * len(nodes)])}
             for k in range(-(-len(slots) // len(nodes)))]
    # a run leaves out the items that ran before its failing commands were first sent (the healthy
    # run's verdicts, already read above): the fabric's pair-round commands come after 56 cheap items
    order = list(healthy.outcomes)
    skips = [before_first(order, sent, {t for fails in plan.values() for t in fails}) for plan in plans]
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        done = list(pool.map(lambda k: _run(tmp_path, f"run{k}", plans[k], selection, skips[k]), range(len(plans))))
    for k, (run, got) in enumerate(done):
        assert run.outcomes, f"run {k}: " + run.stdout[-2000:] + run.stderr[-2000:]
        assert not set(skips[k]) & set(run.outcomes), f"run {k} ran items it was to leave out"
        found += [f"run {k}: {v}" for v in violations(run, got)]
        covered |= {(s["tool"], s["way"]) for s in got if s["way"]}
    assert not found, f"{len(tools)} commands x {len(WAYS)} ways:\n" + "\n".join(found)
    missed = {(t, w) for t in tools for w in WAYS} - covered
    assert not missed, f"never reached while failing: {sorted(missed)}"
