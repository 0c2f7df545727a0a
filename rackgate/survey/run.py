"""Survey every tray of a rack at once: one Host (one ssh ControlMaster) per node, reused by every
check of that node; a bounded number of trays in flight; results in the rack file's order."""
from __future__ import annotations

import time

from .. import registry
from ..config import Rack
from ..transport import Host, fanout, host_for
from .model import CHECKS, UNOBSERVED, Cell, TrayReport
from .tray import declared_cell, survey_tray

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
            r = TrayReport(n.name, n.tray, {"reach": Cell(UNOBSERVED, f"survey crashed: {r!r}")})
        reports.append(r)
    across_trays(reports, rack)
    return reports


def across_trays(reports: list[TrayReport], rack: Rack) -> None:
    """The "rack-gpu" rows (FAB-ACCEL-ID: an accel_id unique rack-wide) judged again across every
    tray read, as their items judge across the rack (registry.across_trays): an accel_id reported
    on two trays fails both."""
    declared = registry.checks()
    for key, row, _ in CHECKS:
        c = declared.get(row)
        if c is None or c.per != "rack-gpu":
            continue
        every = {r.node: p.judged.got.mine for r in reports for p in r.places.get(row, []) if p.judged is not None}
        for r in reports:
            if r.places.get(row):
                r.places[row] = registry.across_trays(c, r.places[row], every, rack)
                r.cells[key] = declared_cell(c, r.places[row], rack, r)
