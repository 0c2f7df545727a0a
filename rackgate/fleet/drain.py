"""Drain, read-only by default: one `scontrol update` per tray with a finding (never for UNKNOWN:
a tray the suite could not observe is not blamed)."""
from __future__ import annotations

import shlex
import subprocess
from typing import TYPE_CHECKING

from ..registry import drain_hint
from ..verdicts import Verdict

if TYPE_CHECKING:
    from .gather import Fleet


def commands(fleet: Fleet) -> list[list[str]]:
    """One drain per tray whose verdict is FAIL, named by its host (the Slurm node name), with its
    first finding as the reason (registry.drain_hint: the row, its action class, what was seen); a
    host shared by several trays is drained once."""
    out: list[list[str]] = []
    done: set[str] = set()
    for rack in fleet["racks"]:
        for node in rack["nodes"]:
            f = next((f for f in rack["findings"] if f["node"] == node["node"]), None)
            if node["verdict"] != Verdict.FAILED.file or f is None or not node["host"] or node["host"] in done:
                continue
            done.add(node["host"])
            seen = " ".join(f["seen"].split()).replace('"', "'")[:200]
            out.append(["scontrol", "update", f"nodename={node['host']}", "state=drain", f"reason={drain_hint(f['row'], seen)}"])
    return out


def show(cmd: list[str]) -> str:
    *head, reason = cmd
    return " ".join(head) + ' reason="' + reason.partition("=")[2] + '"'


def apply(cmds: list[list[str]], timeout_s: float = 30) -> int:
    bad = 0
    for c in cmds:
        try:
            p = subprocess.run(c, capture_output=True, text=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"rackgate fleet: {shlex.join(c[:3])}: {e}")
            bad += 1
            continue
        if p.returncode != 0:
            print(f"rackgate fleet: {show(c)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[:300]}")
            bad += 1
    return bad
