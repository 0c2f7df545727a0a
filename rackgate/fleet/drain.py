"""Drain, read-only by default: one `scontrol update` per tray with a finding (never for UNKNOWN:
a tray the suite could not observe is not blamed)."""
from __future__ import annotations

import shlex
import subprocess


def commands(fleet: dict) -> list[list[str]]:
    out = []
    for rack in fleet["racks"]:
        per_host: dict[str, dict] = {}
        for f in rack["findings"]:
            if f["host"] and f["host"] not in per_host:
                per_host[f["host"]] = f
        for host, f in per_host.items():
            node = next((n for n in rack["nodes"] if n["host"] == host), None)
            if node is None or node["verdict"] != "FAIL":
                continue
            seen = " ".join(f["seen"].split()).replace('"', "'")[:200]
            out.append(["scontrol", "update", f"nodename={host}", "state=drain", f"reason={f['row']}: {seen}"])
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
