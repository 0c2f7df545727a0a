"""PLAT-WEDGED's signals on a node: the kernel log's MES hang lines, kfd entries whose process is a
zombie or gone, kworkers in D, defunct engine processes. A kfd list that is draining or a worker
briefly in D is not a wedge, so when the first look shows either, the probe looks again after the
rack file's platform.wedge_settle_s and keeps only what is still there (the read procedure; what
it means is gates/plat.py `wedged`'s call)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..access import NodeAccess
from . import dmesg, procs
from .target import On


@dataclass(frozen=True)
class Wedge:
    mes: list[dmesg.Hit]   # PLAT-WEDGED's dmesg lines
    stale: list[str]       # kfd entries still held by a zombie or a gone process after the settle
    dstate: list[str]      # kworkers still in D after the settle
    zombies: list[str]     # defunct engine processes (no kfd entry: freed)
    settle_s: float        # how long the second look waited (0: no second look was needed)


def _look(host: NodeAccess, engine_comm: list[str]) -> tuple[list[str], list[str], list[str]]:
    kfd = procs.kfd_pids(host)
    table = procs.processes(host)
    return procs.stale_kfd(kfd, table), procs.d_state_kworkers(table), procs.defunct_engines(table, engine_comm)


def wedge(on: On) -> Wedge:
    p = on.rack.platform
    mes = dmesg.match(dmesg.read_dmesg(on.host), dmesg.PLAT_WEDGED)
    stale, dstate, zombies = _look(on.host, p.engine_comm)
    if not (stale or dstate):
        return Wedge(mes, stale, dstate, zombies, 0.0)
    time.sleep(p.wedge_settle_s)
    stale2, dstate2, zombies = _look(on.host, p.engine_comm)
    return Wedge(mes, [s for s in stale if s in stale2], [d for d in dstate if d in dstate2], zombies, p.wedge_settle_s)
