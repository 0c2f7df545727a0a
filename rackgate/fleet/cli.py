"""rackgate fleet RACK.toml... [--scheduler local|slurm] [--results DIR] [--timeout S] [--plan-only]
                [--drain-failed [--apply]] [-- pytest args]
   rackgate fleet --failed-only RESULTS [--scheduler ...] [--drain-failed [--apply]]
   rackgate fleet --drain-failed --results RESULTS [--apply]
   rackgate fleet --remediate --results RESULTS [--dry-run] [--max-drain-share F] [--max-actions N --per S]
                  [--validity S] [--drain-wait S] [--log FILE] [--mark-fixed NODE [--note TEXT]]

Exit codes (docs/fleet.md): 0 every rack passed, 1 a finding on some rack, 2 usage or rack-file
error, 3 no finding but some rack could not be observed (or its run died / timed out).
--remediate: 0 every drained tray resumed (or nothing to do), 1 a tray left drained with its finding,
2 usage, 3 something could not be done or observed, 4 a guardrail stopped the loop."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Sequence

from ..config import RackFileError
from ..ids import path_arg
from ..report import verdict_file
from ..verdicts import Verdict
from . import drain, gather, local, plan, remediate_cmd, slurm


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rackgate fleet", description="one suite run per rack, one report")
    ap.add_argument("racks", nargs="*", metavar="RACK.toml")
    ap.add_argument("--scheduler", choices=("local", "slurm"), default="local")
    ap.add_argument("--results", default="reports/fleet", metavar="DIR")
    ap.add_argument("--timeout", type=float, default=3600.0, metavar="S", help="per fleet run; past it a rack is UNKNOWN")
    ap.add_argument("--plan-only", action="store_true", help="print each rack's command (and the sbatch lines); run nothing")
    ap.add_argument("--failed-only", metavar="RESULTS", help="re-run only what failed or could not be observed there")
    ap.add_argument("--drain-failed", action="store_true", help="print scontrol drain lines for trays with findings")
    ap.add_argument("--apply", action="store_true", help="with --drain-failed: run them")
    ap.add_argument("--no-render", action="store_true", help="merge the Allure results but do not render them")
    rem = ap.add_argument_group("the remediation loop (docs/fleet.md): rackgate fleet --remediate --results DIR")
    rem.add_argument("--remediate", action="store_true", help="drain each tray with a finding, run its rack file's "
                     "remedies, re-run what failed there, resume it only when that passes")
    rem.add_argument("--dry-run", action="store_true", help="with --remediate: print the whole plan; do nothing")
    rem.add_argument("--max-drain-share", type=float, default=0.5, metavar="F",
                     help="never more than this share of the fleet's Slurm nodes out of service (default 0.5)")
    rem.add_argument("--max-actions", type=int, default=10, metavar="N", help="drains, and remedies, at most N per --per")
    rem.add_argument("--per", type=float, default=3600.0, metavar="S", help="the rate cap's window (default 3600 s)")
    rem.add_argument("--validity", type=float, default=3600.0, metavar="S",
                     help="a finding older than this (without its own valid_until) is re-checked before any action")
    rem.add_argument("--drain-wait", type=float, default=900.0, metavar="S",
                     help="how long a draining node's jobs may take to end before the loop leaves it for later")
    rem.add_argument("--log", metavar="FILE", help="the audit log (default RESULTS/remediate.jsonl)")
    rem.add_argument("--mark-fixed", metavar="NODE", help="with --remediate: an operator says this Slurm node is fixed")
    rem.add_argument("--note", help="with --mark-fixed: what was done")
    return ap


def _retry_args(v: verdict_file.Verdict) -> list[str] | None:
    """The test ids to re-run from a rack's verdict; None: the whole rack (its run left nothing)."""
    bad = [i["test"] for i in v.get("items", []) if i["outcome"] != Verdict.PASSED.file]
    if v["verdict"] == Verdict.UNOBSERVED.file and not v.get("items"):
        return None
    return sorted({path_arg(t) for t in bad})


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    pytest_args = args[args.index("--") + 1:] if "--" in args else []
    mine = args[:args.index("--")] if "--" in args else args
    try:
        o = _parser().parse_args(mine)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    if o.remediate:
        if o.racks or o.failed_only or o.drain_failed or o.plan_only:
            print("rackgate fleet: --remediate takes only --results DIR and its own options", file=sys.stderr)
            return 2
        try:
            return remediate_cmd.command(o)
        except slurm.SlurmError as e:   # nothing done: Slurm could not be read
            print(f"rackgate fleet --remediate: {e}", file=sys.stderr)
            return 3
        except (ValueError, OSError) as e:
            print(f"rackgate fleet --remediate: {e}", file=sys.stderr)
            return 2
    if o.dry_run or o.mark_fixed:
        print("rackgate fleet: --dry-run and --mark-fixed go with --remediate", file=sys.stderr)
        return 2
    if o.apply and not o.drain_failed:
        print("rackgate fleet: --apply only goes with --drain-failed", file=sys.stderr)
        return 2
    try:
        if o.failed_only:
            return _failed_only(o, Path(o.failed_only))
        if not o.racks:
            if o.drain_failed:
                return _drain(o, gather.load(Path(o.results)))
            print("rackgate fleet: name at least one rack file (or --failed-only RESULTS)", file=sys.stderr)
            return 2
        results = Path(o.results).resolve()
        runs = plan.make(o.racks, results, pytest_args)
        fleet = _run(o, results, runs)
    except (RackFileError, ValueError, slurm.SlurmError, OSError) as e:
        print(f"rackgate fleet: {e}", file=sys.stderr)
        return 2
    if fleet is None:
        return 0
    return _drain(o, fleet) if o.drain_failed and fleet["exit_code"] != 2 else fleet["exit_code"]


def _run(o: argparse.Namespace, results: Path, runs: list[plan.RackRun],
         merge_over: dict[str, verdict_file.Verdict] | None = None,
         kept: Sequence[plan.RackRun] = ()) -> gather.Fleet | None:
    # a re-run's tasks index its own plan; the fleet's plan (the racks' full argv) stays for the next one
    plan_file = plan.save(results, runs, plan.RERUN if merge_over else plan.PLAN)
    if o.plan_only:
        for r in runs:
            print(f"{r.name}: {shlex.join(r.command())}")
        if o.scheduler == "slurm":
            try:
                nodes = slurm.slurm_nodes()
            except slurm.SlurmError as e:
                nodes = set()
                print(f"(no Slurm node list: {e}; every rack goes in the array)")
            for argv, text in slurm.sbatch_lines(runs, plan_file, nodes):
                print(f"{shlex.join(argv)}  <<< {text.splitlines()[-1]}")
        return None
    if o.scheduler == "slurm":
        codes = slurm.run(runs, plan_file, o.timeout)
    else:
        codes = local.run(runs, o.timeout)
    if merge_over:
        for r in runs:
            new = gather.rack_verdict(r, codes.get(r.name))
            verdict_file.write(Path(r.results) / "verdict.json", verdict_file.rebuild(merge_over[r.name], new))
    fleet = gather.gather(results, [*runs, *kept], codes)
    print(gather.merge_reports(results, [*runs, *kept], render=not o.no_render, fleet=fleet))
    _summary(fleet)
    return fleet


def _summary(fleet: gather.Fleet) -> None:
    for r in fleet["racks"]:
        print(f"{r['rack']}: {r['verdict']}" + "".join(f"\n  {f['row']} [{f['where']}] {f['seen'][:120]}"
                                                        for f in r["findings"])
              + "".join(f"\n  could not observe: {u['test']}: {u['why'][:120]}" for u in r["unknown"]))
    print(f"fleet: {fleet['verdict']} (exit {fleet['exit_code']})")


def _failed_only(o: argparse.Namespace, results: Path) -> int:
    old = gather.load(results)
    runs, kept, over = [], [], {}
    prev = {p.name: p for p in plan.load_plan(results / plan.PLAN)}
    for r in old["racks"]:
        if r["rack"] not in prev:
            raise ValueError(f"{results / plan.PLAN} has no rack {r['rack']!r}: not the plan of this fleet.json")
        rr = plan.RackRun(r["rack"], r["rack_file"], r["results"], hosts=prev[r["rack"]].hosts)
        base = prev[r["rack"]].argv
        v = verdict_file.read(Path(r["results"]) / "verdict.json")
        again = _retry_args(v)
        if again == []:
            kept.append(rr)
            continue
        rr.argv = [a for a in base if not plan.is_test_path(a)] + (again or [a for a in base if plan.is_test_path(a)])
        runs.append(rr)
        over[rr.name] = v
    if not runs:
        print("rackgate fleet: nothing failed or went unobserved there: nothing to re-run")
        return old["exit_code"]
    fleet = _run(o, results, runs, merge_over=over, kept=kept)
    if fleet is None:
        return 0
    return _drain(o, fleet) if o.drain_failed else fleet["exit_code"]


def _drain(o: argparse.Namespace, fleet: gather.Fleet) -> int:
    cmds = drain.commands(fleet)
    for c in cmds:
        print(drain.show(c))
    if o.apply and drain.apply(cmds):
        return 3
    return fleet["exit_code"]
