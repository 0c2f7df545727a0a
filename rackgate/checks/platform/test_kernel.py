"""PLAT-WEDGED: the GPU is not wedged (PLAT-DMESG, the kernel log of this boot, is declared in rackgate/gates/plat.py)."""
import time

import pytest

from rackgate.gates import plat as judge
from rackgate.probes import dmesg, procs
from rackgate.report.verdict import check


def _suspicious(host, engine_comm):
    kfd = procs.kfd_pids(host)
    table = procs.processes(host)
    return judge.stale_kfd(kfd, table), judge.d_state_kworkers(table), judge.defunct_engines(table, engine_comm)


@pytest.mark.row("PLAT-WEDGED")
def test_gpu_not_wedged(node, rack, evidence):
    p = rack.platform
    lines = dmesg.read_dmesg(node.host)
    mes = dmesg.match(lines, dmesg.PLAT_WEDGED)
    stale, dstate, zombies = _suspicious(node.host, p.engine_comm)
    if stale or dstate:
        # A kfd list that is draining, or a worker briefly in D, is not a wedge: look again later.
        time.sleep(p.wedge_settle_s)
        stale2, dstate2, zombies = _suspicious(node.host, p.engine_comm)
        stale, dstate = [s for s in stale if s in stale2], [d for d in dstate if d in dstate2]
    evidence.attach("wedge signals", "\n".join(
        [h.line.raw for h in mes] + stale + dstate + [f"{z} (no kfd entry: freed)" for z in zombies]) or "(none)")
    seen = []
    if mes:
        seen.append("dmesg: " + dmesg.excerpt(mes, 3))
    if stale:
        seen.append(f"kfd list does not drain after {p.wedge_settle_s:g}s: " + ", ".join(stale))
    if dstate:
        seen.append(f"kworkers stuck in D for {p.wedge_settle_s:g}s: " + ", ".join(dstate))
    check(not seen, "PLAT-WEDGED", node.name, "; ".join(seen))
