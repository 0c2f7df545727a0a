"""verdict.json: one run's machine-readable verdict, per node/tray and per GPU (schema:
verdict.schema.json next to this module, shipped with the package). Every outcome here is a
`rackgate.verdicts.Verdict`, written as its file word (`Verdict.file`) and read back with
`Verdict.read`; a place's and the run's verdict are the one worst-wins rule (`verdicts.worst`). The
TypedDict `Verdict` below is the file's shape.

    PASS     the suite read positive evidence of health for everything it ran there
    FAIL     a finding (a FAILED check) names it; the findings carry seen / means / do and the
             row's action class (rackgate.catalogue.ACTION_CLASSES)
    UNKNOWN  something there could not be observed (ERROR), or nothing ran there (a -m gate run's
             checks are rack-wide: its nodes are UNKNOWN with that reason, the run's verdict PASS)

A finding that names no node (a server-wide check) is a rack finding. The run's verdict is FAIL with
any finding, else UNKNOWN with anything unobserved (or nothing run), else PASS; `exit_code` is
rackgate's documented exit code for it (0 / 1 / 3, `Verdict.exit_code`).

`run` says whether the run finished: "finished"; "running" (the file is rewritten as each item
finishes: a run that died without finishing -- SIGKILL, the OOM killer -- leaves this, with every
item judged before it); "interrupted" (a signal stopped it, `signal` names it: the items judged so
far, the rest not run). A run that did not finish is never PASS: "(the run)" is a rack unknown.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from .. import verdicts
from ..catalogue import ACTION_CLASSES, UnknownRow, row
from . import rackmap

SCHEMA = Path(__file__).with_name("verdict.schema.json")
FORMAT = "rackgate-verdict/1"
# the file's three words (`Verdict.file`): UNKNOWN is could not observe, an internal error, or nothing run
PASS, FAIL, UNKNOWN = verdicts.Verdict.PASSED, verdicts.Verdict.FAILED, verdicts.Verdict.UNOBSERVED
RUN = "(the run)"   # the test named by a run that left no verdict
NOTHING = "(no check)"   # a node no item of the run named: UNKNOWN, never PASS
# the most a tray is asked to do wins: do-not-use above servicing above a reboot ...
_SEVERITY = {c: i for i, c in enumerate(ACTION_CLASSES)}


# The file's shapes, as verdict.schema.json states them.
class Finding(TypedDict):
    row: str
    where: str
    seen: str
    means: str
    do: str
    action_class: str
    test: str


class Unknown(TypedDict):
    test: str
    why: str


class GpuVerdict(TypedDict):
    gpu: int
    verdict: str


class NodeVerdict(TypedDict):
    node: str
    tray: int
    host: str
    verdict: str
    action_class: str
    findings: list[Finding]
    unknown: list[Unknown]
    gpus: list[GpuVerdict]


class ItemOutcome(TypedDict):
    test: str
    outcome: str
    row: str
    where: str
    seen: str
    judged_at: str      # when, and until when it stands (rackgate/report/validity.py)
    valid_until: str
    image: str          # the image it was judged on (validity: `image` rows)


class RunState(TypedDict):
    state: str      # FINISHED, RUNNING or INTERRUPTED
    signal: str     # the signal that stopped it ('' unless interrupted)


FINISHED, RUNNING, INTERRUPTED = "finished", "running", "interrupted"
DONE: RunState = {"state": FINISHED, "signal": ""}

Verdict = TypedDict("Verdict", {
    "format": str, "rack": str, "verdict": str, "exit_code": int, "action_class": str,
    "counts": dict[str, int], "rack_findings": list[Finding], "rack_unknown": list[Unknown],
    "nodes": list[NodeVerdict], "items": list[ItemOutcome], "run": RunState})


def unfinished_why(run: RunState, judged: int) -> str:
    """The rack unknown of a run that did not finish: what it left judged and what not."""
    if run["state"] == INTERRUPTED:
        return (f"the run did not finish: interrupted by {run['signal'] or 'a signal'} after {judged} item(s) were "
                "judged; the rest were not run (re-run them: rackgate fleet --failed-only, or the same command)")
    return (f"the run had not finished when this file was last written ({judged} item(s) judged): it is still "
            "running, or it was killed without a chance to finish (SIGKILL, the OOM killer, a lost node)")


@dataclass
class Item:
    """One test item's outcome: pass / fail (a finding: row, where, seen) / unknown (why)."""
    nodeid: str
    outcome: verdicts.Verdict       # PASS, FAIL or UNKNOWN (could not observe, or an internal error)
    row: str = ""
    where: str = ""
    seen: str = ""
    judged_at: str = ""             # when, and until when it stands (rackgate/report/validity.py)
    valid_until: str = ""
    image: str = ""


@dataclass
class _Place:
    verdicts: list[verdicts.Verdict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unknown: list[Unknown] = field(default_factory=list)


def worst(seen: list[verdicts.Verdict]) -> str:
    """The file's word for a place with these verdicts: nothing seen there is UNKNOWN, never PASS."""
    return (verdicts.worst(seen) or UNKNOWN).file


def finding(it: Item) -> Finding:
    try:
        r = row(it.row)
        means, do, action_class = r.meaning, r.action, r.action_class
    except UnknownRow:
        means, do, action_class = "", "", "none"
    return {"row": it.row, "where": it.where, "seen": it.seen, "means": means, "do": do,
            "action_class": action_class, "test": it.nodeid}


def action_class(findings: list[Finding]) -> str:
    return max((f["action_class"] for f in findings), key=_SEVERITY.__getitem__, default="none")


def build(rack_name: str, nodes: list[tuple[str, int, str]], gpus_per_node: int, items: list[Item],
          run: RunState = DONE) -> Verdict:
    """nodes: (name, tray, host) of the rack; items: every item's outcome (skipped ones left out);
    run: whether the run finished (a run that did not is a rack unknown: never PASS)."""
    names = {n for n, _, _ in nodes}
    cells = {(n, g): _Place() for n, _, _ in nodes for g in range(gpus_per_node)}
    per_node = {n: _Place() for n, _, _ in nodes}
    rack = _Place()
    for it in items:
        where = rackmap.targets(names, gpus_per_node, it.nodeid)   # a GPU, a node's GPUs, a pair's
        owners = [per_node[n] for n in dict.fromkeys(n for n, _ in where)] or [rack]  # no node named: rack-wide
        for p in [cells[c] for c in where] + owners:
            p.verdicts.append(it.outcome)
        for p in owners:
            if it.outcome is FAIL:
                p.findings.append(finding(it))
            elif it.outcome.is_error:
                p.unknown.append({"test": it.nodeid, "why": it.seen})
    out_nodes: list[NodeVerdict] = []
    for n, tray, host in nodes:
        p = per_node[n]
        unknown: list[Unknown] = p.unknown if p.verdicts else [{"test": NOTHING, "why": "no check of this run named this node "
                                                 "(its selection ran only rack-wide checks, or none)"}]
        out_nodes.append({"node": n, "tray": tray, "host": host, "verdict": worst(p.verdicts),
                          "action_class": action_class(p.findings), "findings": p.findings, "unknown": unknown,
                          "gpus": [{"gpu": g, "verdict": worst(cells[(n, g)].verdicts)} for g in range(gpus_per_node)]})
    if run["state"] != FINISHED:
        rack.unknown.append({"test": RUN, "why": unfinished_why(run, len(items))})
    all_findings = [f for p in (*per_node.values(), rack) for f in p.findings]
    all_unknown = [u for p in (*per_node.values(), rack) for u in p.unknown]
    verdict = FAIL if all_findings else UNKNOWN if all_unknown or not items else PASS
    return {"format": FORMAT, "rack": rack_name, "verdict": verdict.file, "exit_code": verdict.exit_code,
            "action_class": action_class(all_findings),
            "counts": {v.file.lower(): sum(it.outcome.file == v.file for it in items) for v in (PASS, FAIL, UNKNOWN)},
            "rack_findings": rack.findings, "rack_unknown": rack.unknown, "nodes": out_nodes,
            "items": [{"test": it.nodeid, "outcome": it.outcome.file, "row": it.row, "where": it.where, "seen": it.seen,
                       "judged_at": it.judged_at, "valid_until": it.valid_until, "image": it.image} for it in items],
            "run": run}


def rebuild(old: Verdict, new: Verdict) -> Verdict:
    """A re-run's verdict merged over the old one: each item's newest outcome wins
    (rackgate fleet --failed-only)."""
    items = {i["test"]: i for i in old.get("items", [])} | {i["test"]: i for i in new.get("items", [])}
    base = new if new.get("nodes") else old
    nodes = [(n["node"], n["tray"], n["host"]) for n in base["nodes"]]
    gpus = max((len(n["gpus"]) for n in base["nodes"]), default=0)
    return build(base["rack"], nodes, gpus, [Item(i["test"], verdicts.Verdict.read(i["outcome"]), i["row"], i["where"], i["seen"],
                                                  i.get("judged_at", ""), i.get("valid_until", ""), i.get("image", ""))
                                             for i in items.values()], new.get("run", DONE))


def write(path: Path, verdict: Verdict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")   # atomically replaced: a reader sees the old or the new
    tmp.write_text(json.dumps(verdict, indent=1) + "\n")
    tmp.replace(path)


def unknown(rack_name: str, why: str) -> Verdict:
    """The verdict of a run that left none (it died, timed out, never started)."""
    return {"format": FORMAT, "rack": rack_name, "verdict": UNKNOWN.file, "exit_code": UNKNOWN.exit_code,
            "action_class": "none",
            "counts": {v.file.lower(): int(v is UNKNOWN) for v in (PASS, FAIL, UNKNOWN)}, "rack_findings": [],
            "rack_unknown": [{"test": RUN, "why": why}], "nodes": [], "items": [], "run": DONE}


def read(path: Path) -> Verdict:
    """A verdict file; ValueError (one line) when it is missing, not JSON or not a verdict."""
    try:
        data: Verdict = json.loads(path.read_text())  # checked below as far as the format
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable verdict file: {e}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a rackgate verdict file (format {FORMAT!r} expected)")
    return data
