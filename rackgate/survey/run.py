"""Survey every tray of a rack at once: one Host (one ssh ControlMaster) per node, reused by every
check of that node; a bounded number of trays in flight; results in the rack file's order."""
from __future__ import annotations

import time

from ..config import Rack
from ..gates import fabric as fab_judge
from ..transport import Host, fanout, host_for
from .model import FAIL, Cell, TrayReport
from .tray import survey_tray

DEFAULT_JOBS = 64  # the largest rack the sim builds; each in-flight tray is one ssh client at a time


def hosts_for(rack: Rack) -> dict[str, Host]:
    return {n.name: host_for(n, rack) for n in rack.nodes}


def survey(rack: Rack, jobs: int = DEFAULT_JOBS, hosts: dict[str, Host] | None = None) -> list[TrayReport]:
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


def duplicates(reports: list[TrayReport], rack: Rack) -> None:
    """FAB-ACCEL-ID across trays (the judge's uniqueness over every tray's cards, as the item
    judges it rack-wide): an accel_id reported on two trays fails both."""
    every = {li.where(r.node): li for r in reports for li in r.links}
    for r in reports:
        bad = []
        for li in r.links:
            where = li.where(r.node)
            elsewhere = [w for w in fab_judge.same_accel_id(li, where, every) if not w.startswith(r.node + "/")]
            if elsewhere:
                bad.append(f"accel_id {li.accel_id_raw} is also reported by {', '.join(elsewhere)}")
                r.gpus[li.gpu if li.gpu is not None else li.card] = FAIL
        if bad:
            old = r.cells.get("accel")
            prev = [old.seen] if old is not None and old.status == FAIL else []
            r.cells["accel"] = Cell(FAIL, "; ".join(prev + bad))
