"""`rackgate survey --rack RACK.toml [--pick N] [--top K] [--jobs J] [--write-rack FILE]`.

Read-only: every tray surveyed at once, a table per tray, the best N-tray sets ranked and the
reason each other tray is out; --write-rack writes a rack file for the chosen set. Exit 0 when a
set was found, 1 when none was, 2 on bad input (one line)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .. import config as rackfile
from .. import simrack
from . import pick, run, table
from .rackfile import write_rack


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rackgate survey", description=__doc__.split("\n\n")[1])
    ap.add_argument("--rack", required=True, help="rack file listing every tray (TOML)")
    ap.add_argument("--pick", type=int, default=4, metavar="N", help="trays in the set (default 4: dp16/ep16)")
    ap.add_argument("--top", type=int, default=3, metavar="K", help="how many ranked sets to show (default 3)")
    ap.add_argument("--jobs", type=int, default=run.DEFAULT_JOBS, metavar="J",
                    help=f"trays surveyed at once (default {run.DEFAULT_JOBS})")
    ap.add_argument("--write-rack", metavar="FILE", help="write a rack file for the chosen set")
    ap.add_argument("--sim-fault", action="append", default=[], metavar="NAME[@NODE[:GPU]]",
                    help="simulated rack only: add a fault (repeatable)")
    ap.add_argument("--map", metavar="PNG", help="also write the rack map (trays x GPUs) as a PNG")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    if a.pick < 1 or a.jobs < 1 or a.top < 1:
        print("rackgate survey: --pick, --top and --jobs must be at least 1", file=sys.stderr)
        return 2
    try:
        rack = rackfile.load(a.rack)
    except rackfile.RackFileError as e:
        print(f"rackgate survey: {e}", file=sys.stderr)
        return 2
    sim = None
    if rack.sim is not None:
        # the written rack file names the sim's node roots: keep them after the survey
        workdir = None
        if a.write_rack:
            import os
            import tempfile
            workdir = os.environ.get("RACKGATE_SIM_WORKDIR") or tempfile.mkdtemp(prefix="rackgate-survey-sim-")
        try:
            sim = simrack.build(rack, a.sim_fault, workdir=workdir)  # the sim, only for a [sim] table
        except simrack.FaultError as e:
            print(f"rackgate survey: {e}", file=sys.stderr)
            return 2
        rack = sim.rack
    elif a.sim_fault:
        print(f"rackgate survey: --sim-fault applies to the simulated rack only; {a.rack} is a real rack", file=sys.stderr)
        return 2
    try:
        t0 = time.monotonic()
        reports = run.survey(rack, jobs=a.jobs)
        took = time.monotonic() - t0
        prop = pick.propose(reports, a.pick, a.top)
        print(f"survey of {rack.name}: {len(reports)} trays in {took:.1f}s ({min(a.jobs, len(reports))} at once)")
        print(table.table(reports))
        print()
        from ..report import rackmap
        print(rackmap.terminal_survey(reports, prop, rack.gpus_per_node))
        print()
        print(table.proposal(prop, reports))
        if prop.chosen is not None:
            from ..fabric import pairs
            print()
            print(pairs.describe_plan(pairs.plan(list(prop.chosen.nodes)), rack.fabric))
        if a.map:
            Path(a.map).write_bytes(rackmap.png_survey(reports, prop, rack.gpus_per_node, title=f"survey of {rack.name}"))
            print(f"rack map: {a.map}")
        if a.write_rack:
            if prop.chosen is None:
                print(f"rackgate survey: no set to write to {a.write_rack}", file=sys.stderr)
                return 1
            write_rack(Path(a.write_rack), Path(a.rack), rack, prop.chosen.nodes, simulated=sim is not None)
            print(f"wrote {a.write_rack}: {', '.join(prop.chosen.nodes)}"
                  + (f" (the sim's trays stay in {sim.dir} for it)" if sim is not None else ""))
        return 0 if prop.chosen is not None else 1
    finally:
        if sim is not None and not a.write_rack:
            sim.stop()
        elif sim is not None:
            for ag in sim.agents:  # the node roots stay; the sim's own processes end with us
                ag.stop(grace_s=2)
