"""Each rack's results -> one fleet.json and one merged Allure report. A rack whose run left no
verdict file (it died, overran, never started) is its own UNKNOWN entry; the others are unaffected."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TypedDict

from ..report import fleet as allure_fleet
from ..report import verdict_file
from ..verdicts import of_runs
from .local import OUTPUT, exit_code_of
from .plan import RackRun

FLEET = "fleet.json"
FORMAT = "rackgate-fleet/1"


# fleet.json's shapes: each rack's verdict file, summed up.
class FleetFinding(verdict_file.Finding):
    node: str
    host: str


class NodeSummary(TypedDict):
    node: str
    tray: int
    host: str
    verdict: str
    action_class: str


class RackEntry(TypedDict):
    rack: str
    rack_file: str
    results: str
    exit_code: int | None
    verdict: str
    time_limited: bool      # stopped by a time limit: the fleet's --timeout, or SIGTERM (what Slurm's TimeLimit sends)
    stopped: str            # why the run did not finish ('' when it did): the verdict's items are those judged before
    action_class: str
    findings: list[FleetFinding]
    unknown: list[verdict_file.Unknown]
    nodes: list[NodeSummary]


class Fleet(TypedDict):
    format: str
    verdict: str
    exit_code: int
    racks: list[RackEntry]


def rack_verdict(r: RackRun, rc: int | None) -> verdict_file.Verdict:
    d = Path(r.results)
    try:
        return verdict_file.read(d / "verdict.json")
    except ValueError:
        tail = (d / OUTPUT).read_text(errors="replace").strip().splitlines()[-1:] if (d / OUTPUT).exists() else []
        why = ("the run did not finish (ended past the timeout, or its task was lost)" if rc is None
               else f"the run exited {rc} without a verdict file")
        return verdict_file.unknown(r.name, why + (f"; last output: {tail[0][:300]}" if tail else ""))


def stopped(v: verdict_file.Verdict, rc: int | None) -> tuple[bool, str]:
    """(time-limited, why) of a rack's run that did not finish; (False, '') for one that did. rc None:
    the fleet's own timeout ended it (TERM, then KILL past the run's bound)."""
    run = v.get("run", verdict_file.DONE)
    sig = run["signal"] if run["state"] == verdict_file.INTERRUPTED else ""
    if rc is None:
        how = f"it wrote its reports on {sig}" if sig else "it left no reports of its own"
        return True, f"time limit: the run passed rackgate fleet's --timeout and was stopped ({how})"
    if sig == "SIGTERM":
        return True, ("time limit or stop: the run was ended by SIGTERM (what Slurm sends at the job's TimeLimit, "
                      "scancel and a container stop send); its verdict holds the items judged before it")
    if sig:
        return False, f"interrupted by {sig}: its verdict holds the items judged before it"
    if run["state"] == verdict_file.RUNNING:
        return False, (f"the run ended without finishing (exit {rc}: killed, e.g. SIGKILL or the OOM killer); "
                       "its verdict holds the items judged before it")
    return False, ""


def gather(results: Path, runs: list[RackRun], codes: dict[str, int | None]) -> Fleet:
    """codes: the exit codes of the racks run now; the others (kept by --failed-only) from their results."""
    racks: list[RackEntry] = []
    for r in runs:
        code = codes[r.name] if r.name in codes else exit_code_of(r)
        v = rack_verdict(r, code)
        findings: list[FleetFinding] = [{**f, "node": n["node"], "host": n["host"]} for n in v["nodes"] for f in n["findings"]]
        findings += [{**f, "node": "", "host": ""} for f in v["rack_findings"]]
        limited, why = stopped(v, code)
        racks.append({"rack": r.name, "rack_file": r.rack_file, "results": r.results, "exit_code": code,
                      "verdict": v["verdict"], "time_limited": limited, "stopped": why, "action_class": v["action_class"],
                      "findings": findings,
                      "unknown": [u for n in v["nodes"] for u in n["unknown"] if u["test"] != verdict_file.NOTHING]
                      + v["rack_unknown"],
                      "nodes": [{"node": n["node"], "tray": n["tray"], "host": n["host"], "verdict": n["verdict"],
                                 "action_class": n["action_class"]} for n in v["nodes"]]})
        if not (Path(r.results) / "verdict.json").exists():
            verdict_file.write(Path(r.results) / "verdict.json", v)   # the UNKNOWN, for --failed-only
    said = of_runs(r["verdict"] for r in racks)
    out: Fleet = {"format": FORMAT, "verdict": said.file, "exit_code": said.exit_code, "racks": racks}
    (results / FLEET).write_text(json.dumps(out, indent=1) + "\n")
    return out


def merge_reports(results: Path, runs: list[RackRun], render: bool = True, fleet: Fleet | None = None) -> str:
    """Every rack's Allure results (those that left any) into results/allure-merged, with the
    fleet's overview (each rack's verdict and findings) when `fleet` is given; rendered once into
    results/report, each rack's own into <its results>/report; returns a line saying what was done
    (a merge or render that fails is said there: the fleet's verdict stands without the report)."""
    sources = [Path(r.results) / "allure" for r in runs if (Path(r.results) / "allure" / allure_fleet.ENV).exists()]
    if not sources:
        return "no rack left Allure results"
    merged, report = results / "allure-merged", results / "report"
    try:
        if merged.exists():
            shutil.rmtree(merged)   # a re-run's merge is the fleet now, not the fleet now and before
        counts = allure_fleet.merge(merged, sources)
    except (allure_fleet.FleetError, OSError, json.JSONDecodeError) as e:
        return f"Allure results not merged: {e}"
    line = f"Allure results merged in {merged} ({', '.join(f'{k}: {v}' for k, v in counts.items())})"
    own = {r.name: Path(r.results) / "report" for r in runs if Path(r.results) / "allure" in sources}
    if fleet is not None:
        allure_fleet.overview(merged, [_summary(r, os.path.relpath(own[r["rack"]] / "index.html", report)
                                                if render and r["rack"] in own else "") for r in fleet["racks"]])
    if render:
        from ..report import render as allure_render
        title = allure_fleet.title([_summary(r, "") for r in fleet["racks"]]) if fleet is not None else "fleet"
        try:
            for r in runs:
                if r.name in own:
                    allure_render.render(Path(r.results) / "allure", own[r.name], name=f"{r.name}: {_verdict_of(fleet, r.name)}")
            line += f"; report: {allure_render.render(merged, report, name=title)}"
            line += "; each rack's own: " + ", ".join(str(p) for p in own.values())
        except allure_render.RenderError as e:
            line += f"; not rendered: {str(e).splitlines()[0]}"
    return line


def _summary(r: RackEntry, report: str) -> allure_fleet.RackSummary:
    return {"rack": r["rack"], "verdict": r["verdict"], "report": report,
            "findings": [f"{f['row']} [{f['where']}] {f['seen'][:200]}" for f in r["findings"]],
            "unknown": [f"{u['test']}: {u['why'][:200]}" for u in r["unknown"]]}


def _verdict_of(fleet: Fleet | None, rack: str) -> str:
    return next((r["verdict"] for r in (fleet or {"racks": []})["racks"] if r["rack"] == rack), "?")


def load(results: Path) -> Fleet:
    try:
        data: Fleet = json.loads((results / FLEET).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{results}: no readable {FLEET}: {e}") from None
    if data.get("format") != FORMAT:
        raise ValueError(f"{results / FLEET}: not a rackgate fleet file")
    return data
