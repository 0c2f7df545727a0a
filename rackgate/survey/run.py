"""Survey every tray of a rack at once: one Host (one ssh ControlMaster) per node, reused by every
check of that node; a bounded number of trays in flight; results in the rack file's order."""
from __future__ import annotations

import time

from ..transport import Host, fanout, host_for
from .model import FAIL, Cell, TrayReport
from .tray import survey_tray

DEFAULT_JOBS = 64  # the largest rack the sim builds; each in-flight tray is one ssh client at a time


def hosts_for(rack) -> dict[str, Host]:
    return {n.name: host_for(n, rack) for n in rack.nodes}


def survey(rack, jobs: int = DEFAULT_JOBS, hosts: dict[str, Host] | None = None) -> list[TrayReport]:
    hosts = hosts or hosts_for(rack)
    now = time.time()
    got = fanout(rack.nodes, lambda n: survey_tray(hosts[n.name], n, rack, now), max_workers=max(1, jobs))
    reports = []
    for n, r in zip(rack.nodes, got):
        if isinstance(r, Exception):  # a bug, not the tray: shown, never silently dropped
            r = TrayReport(n.name, n.tray, {"reach": Cell("could not observe", f"survey crashed: {r!r}")})
        reports.append(r)
    duplicates(reports, rack)
    return reports


def duplicates(reports: list[TrayReport], rack) -> None:
    """FAB-ACCEL-ID across trays: an accel_id reported by two GPUs fails both trays."""
    seen: dict[int, list[str]] = {}
    for r in reports:
        for li in r.links:
            if li.accel_id is not None and li.accel_state in rack.fabric.active_states:
                seen.setdefault(li.accel_id, []).append(li.where(r.node))
    for r in reports:
        bad = [f"accel_id {aid} is also reported by {', '.join(w for w in where if not w.startswith(r.node + '/'))}"
               for aid, where in seen.items() if len(where) > 1 and any(w.startswith(r.node + "/") for w in where)
               and any(not w.startswith(r.node + "/") for w in where)]
        if bad:
            old = r.cells.get("accel")
            prev = [old.seen] if old is not None and old.status == FAIL else []
            r.cells["accel"] = Cell(FAIL, "; ".join(prev + bad))
