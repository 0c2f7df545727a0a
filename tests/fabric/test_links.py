"""FAB-STATE, FAB-POD: every link trained, and all nodes in one fabric domain."""
import time

import pytest

from rackgate.probes import ualink
from rackgate.report.verdict import check
from rackgate.transport import fanout


@pytest.mark.row("FAB-STATE")
def test_accel_state(gpu, rack, evidence):
    """'unconfigured' is normal for tens of seconds after modprobe: wait (bounded) before judging."""
    f = rack.fabric
    deadline = time.monotonic() + f.state_wait_s
    seen = []
    while True:
        link = ualink.read_link(gpu.node.host, gpu.index)
        seen.append(f"{time.strftime('%H:%M:%S')} {link.summary()}")
        if link.accel_state in f.active_states or time.monotonic() >= deadline:
            break
        time.sleep(min(f.state_poll_s, max(0.0, deadline - time.monotonic())))
    evidence.attach("accel_state polls", "\n".join(seen))
    check(link.accel_state in f.active_states, "FAB-STATE", gpu.where,
          f"{link.summary()} still after {f.state_wait_s:g}s (fabric.state_wait_s)")


@pytest.mark.row("FAB-POD")
def test_pod_ids_identical(rack, hosts, evidence):
    cards = range(rack.gpus_per_node)
    names = list(hosts)
    links = dict(zip(names, fanout(names, lambda name: ualink.read_links(hosts[name], cards))))
    for got in links.values():
        if isinstance(got, Exception):
            raise got
    # A link that is not trained reads all-zero PPOD: that is FAB-STATE's finding, not a pod mismatch.
    trained = {f"{name}/card{l.card}": (l.ppod_id, l.vpod_id) for name, ls in links.items() for l in ls
               if l.accel_state in rack.fabric.active_states}
    untrained = [f"{name}/card{l.card}" for name, ls in links.items() for l in ls
                 if l.accel_state not in rack.fabric.active_states]
    evidence.attach("PPOD_ID / VPOD_ID", "\n".join(f"{k}: ppod={p} vpod={v}" for k, (p, v) in trained.items())
                    + (f"\nnot trained (left to FAB-STATE): {', '.join(untrained)}" if untrained else ""))
    groups: dict[tuple, list[str]] = {}
    for where, pv in trained.items():
        groups.setdefault(pv, []).append(where)
    if len(groups) > 1:
        major = max(groups.values(), key=len)
        ref = trained[major[0]]
        odd = [f"{w} ppod={pv[0]} vpod={pv[1]}" for pv, ws in groups.items() if ws is not major for w in ws]
        odd_nodes = sorted({o.split("/")[0] for o in odd})
        check(False, "FAB-POD", ",".join(odd_nodes),
              f"{'; '.join(odd)} differ from the rest of the rack (ppod={ref[0]} vpod={ref[1]})")
