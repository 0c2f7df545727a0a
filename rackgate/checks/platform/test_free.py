"""PLAT-FREE: nobody else is on the rack. ALL containers (never filtered by our name), the create
events of the last minutes, and the processes holding /dev/kfd: GPU memory at 0% proves nothing."""
import time

import pytest

from rackgate.gates import plat as judge
from rackgate.probes import docker, procs
from rackgate.report.verdict import check


@pytest.mark.row("PLAT-FREE")
def test_rack_is_free(node, rack, evidence):
    p = rack.platform
    rows, ps_raw = docker.ps_all(node.host)
    events, ev_raw = docker.recent_creates(node.host, p.free_events_since)
    kfd = procs.kfd_pids(node.host)
    table = procs.processes(node.host) if kfd else {}
    cids = procs.containers_of(node.host, kfd) if kfd else {}
    users = {pid: (table.get(pid), cids.get(pid)) for pid in kfd}
    evidence.attach("docker ps -a", ps_raw or "(no containers)")
    evidence.attach(f"docker events --since {p.free_events_since} (create)", ev_raw or "(none)")
    evidence.attach("kfd process list", "\n".join(
        f"{pid}: {u[0].summary() if u[0] else 'process gone'} container={u[1] or '-'}" for pid, u in users.items())
        or "(empty)")
    own = {rack.container, *p.own_containers}
    bad = judge.free(rows, events, users, own, time.time())
    check(not bad, "PLAT-FREE", node.name, "; ".join(bad))
