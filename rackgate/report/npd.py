"""`rackgate npd CONDITION [--verdict FILE] [--node NAME] [--max-length N]`: a node-problem-detector
custom-plugin (kubernetes/node-problem-detector, pkg/custompluginmonitor): one line on stdout and
the exit status NPD reads -- 0 OK, 1 NonOK (a problem), anything else Unknown (rackgate uses 2).
It judges nothing itself: it reads the verdict file a run or `rackgate watch` keeps current, so it
answers within NPD's plugin timeout (5 s by default) every `invoke_interval`.

    gpu-ras   the GPUs' hardware errors: PLAT-RAS, PLAT-WEDGED, FAB-ERRORS, SRV-HW-ERRORS
    link      the fabric: link state, AccIds, training, pod, the pair rounds and collectives
    serving   the server on this rack: SRV-*, BENCH-*, ACC-*

Per condition, over the items of its rows at --node (and the rack-wide ones; every node without
--node): a finding -> 1 naming it; else anything unobserved, expired (rackgate/report/validity.py)
or nothing judged at all -> 2 saying which; else 0 with how many checks stand. The line is cut at
--max-length (NPD's max_output_length, 80 by default, cuts it there too).
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import ids
from . import validity
from .status import place_of

OK, PROBLEM, UNKNOWN = 0, 1, 2
CONDITIONS: dict[str, tuple[str, ...]] = {
    "gpu-ras": ("PLAT-RAS", "PLAT-WEDGED", "FAB-ERRORS", "SRV-HW-ERRORS"),
    "link": ("FAB-STATE", "FAB-ACCEL-ID", "FAB-TRAINING", "FAB-POD", "FAB-UNPOPULATED", "FAB-P2P", "FAB-BW",
             "FAB-DMESG", "FAB-COLLECTIVE", "FAB-TRANSPORT"),
    "serving": ("SRV-*", "BENCH-*", "ACC-*"),
}


def judge(verdict: Mapping[str, Any], condition: str, node: str, now: datetime) -> tuple[int, str]:
    """(exit status, the line) for one condition at one node ("" every node)."""
    patterns = CONDITIONS[condition]
    nodes = verdict.get("nodes", [])
    names = {n["node"] for n in nodes}
    if node and node not in names:
        return UNKNOWN, f"{condition}: rack {verdict.get('rack', '?')} has no node {node!r}"
    gpus = max((len(n["gpus"]) for n in nodes), default=0)
    items = verdict.get("items", [])
    image = validity.current_image(items)
    mine = []
    for it in items:
        if not any(fnmatch.fnmatchcase(str(it.get("row", "")), p) for p in patterns):
            continue
        p = place_of(str(it["test"]), names, gpus)
        if not node or not p.nodes or node in p.nodes:
            mine.append((validity.state(it, now, image), it))
    where = f" on {node}" if node else ""
    if not mine:
        return UNKNOWN, f"{condition}: nothing judged{where} (no item of its rows in the verdict)"
    failed = [it for s, it in mine if s == validity.FAILED]
    if failed:
        f = failed[0]
        more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
        return PROBLEM, f"{f['row']} [{f.get('where', '')}]{more}: {' '.join(str(f.get('seen', '')).split())}"
    for st in (validity.UNOBSERVED, validity.EXPIRED):
        bad = [it for s, it in mine if s == st]
        if bad:
            name = ids.short(str(bad[0]["test"]))
            return UNKNOWN, f"{condition}{where}: {len(bad)} of {len(mine)} {st} ({name})"
    return OK, f"{condition}{where}: {len(mine)} checks green"


def main(argv: list[str] | None = None) -> int:
    from . import verdict_file
    ap = argparse.ArgumentParser(prog="rackgate npd", description="a node-problem-detector custom plugin (exit 0/1/2, one line)")
    ap.add_argument("condition", choices=sorted(CONDITIONS))
    ap.add_argument("--verdict", default="reports/verdict.json", metavar="FILE")
    ap.add_argument("--node", default="", help="this node's name in the rack file (default: every node)")
    ap.add_argument("--max-length", type=int, default=80, metavar="N", help="cut the line here (NPD's max_output_length)")
    try:
        o = ap.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        return OK if e.code == 0 else UNKNOWN
    try:
        code, line = judge(verdict_file.read(Path(o.verdict)), o.condition, o.node, datetime.now(timezone.utc))
    except ValueError as e:
        code, line = UNKNOWN, f"{o.condition}: {e}"
    except (KeyError, TypeError) as e:
        code, line = UNKNOWN, f"{o.condition}: {o.verdict}: not a verdict this version reads ({type(e).__name__}: {e})"
    print(" ".join(line.split())[:max(o.max_length, 1)])
    return code
