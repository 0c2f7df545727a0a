"""FAB-COLLECTIVE, FAB-TRANSPORT: a minimal torch.distributed all_reduce inside the container,
world sizes 1, 2, 4 on each node, then across all nodes; and the transport NCCL chose for it.
The probe is shipped with the suite (rackgate/probes/collective_probe.py), runs on every node at
once (rackgate/fixtures/fabric.py: collective_runs) and bounds every world itself."""
import pytest

from rackgate.errors import CouldNotObserve, NotRun
from rackgate.gates import fabric as judge
from rackgate.report.verdict import check


def _node(collective_runs, name, evidence=None):
    got = collective_runs.get()[name]
    if isinstance(got, Exception):
        raise got
    res, out = got
    if evidence is not None:
        evidence.attach(f"collective probe on {name}", res.evidence())
    if not out.started:
        raise CouldNotObserve(f"{name}: the collective probe did not start (rc={res.rc}): "
                              f"{(res.stderr.strip().splitlines() or res.stdout.strip().splitlines() or ['no output'])[-1]}")
    if out.torch.startswith("missing"):
        raise CouldNotObserve(f"{name}: the container's python has no torch ({out.torch})")
    return res, out


def _require_results(name, res, out, worlds: list[int], across: bool = False):
    """A world the probe never reported on (its output cut short, the process ended) is nothing
    to judge: could not observe, naming what came back -- never a collective fault."""
    missing = [f"ws={ws}" for ws in worlds if out.worlds.get(ws) is None or out.worlds[ws].status == "missing"]
    if across and (out.across is None or out.across.status == "missing"):
        missing.append("the run across nodes")
    if missing:
        said = (res.stderr.strip().splitlines() or res.stdout.strip().splitlines() or ["no output"])[-1][:200]
        raise CouldNotObserve(f"{name}: the collective probe reported no result for {', '.join(missing)} "
                              f"(rc={res.rc}; last line: {said})")


@pytest.mark.row("FAB-COLLECTIVE")
def test_collective(node, rack, collective_runs, evidence):
    res, out = _node(collective_runs, node.name, evidence)
    _require_results(node.name, res, out, rack.fabric.collective_world_sizes)
    found = judge.collective_worlds(out, rack.fabric.collective_world_sizes)
    check(not found, "FAB-COLLECTIVE", node.name, "; ".join(found))


@pytest.mark.row("FAB-COLLECTIVE")
def test_collective_bandwidth(node, rack, collective_runs, evidence, facts):
    """Bus bandwidth of an all_reduce of fabric.collective_bw_bytes in each of this node's own
    worlds of 2+ ranks (a fact for the regression comparison; below the floor when one is set)."""
    cfg = rack.fabric
    sizes = [w for w in cfg.collective_world_sizes if w > 1]
    if not cfg.collective_bw_bytes or not sizes:
        pytest.skip("the rack file measures no collective bandwidth (collective_bw_bytes = 0 or no world of 2+)")
    _, out = _node(collective_runs, node.name)
    found, seen = [], []
    for ws in sizes:
        w = out.worlds.get(ws)
        if w is not None and w.status != "ok":
            raise NotRun("FAB-COLLECTIVE", f"on {node.name} (world {ws}: {w.status}): no bandwidth from a collective "
                         "that did not complete")
        bw = w.bandwidth() if w is not None else None
        if bw is None:
            raise CouldNotObserve(f"{node.name}: world {ws}: no bus bandwidth from the collective probe "
                                  f"(world status {w.status if w else 'missing'}, {len(w.timings) if w else 0} of "
                                  f"{ws} ranks printed a time)")
        seen.append(f"ws={ws}: {bw.describe()}")
        facts.record("fabric.collective.busbw_gbps", bw.busbw_gbps, where=f"{node.name}/ws{ws}", unit="GB/s",
                     row="FAB-COLLECTIVE")
        if cfg.collective_busbw_floor_gbps and bw.busbw_gbps < cfg.collective_busbw_floor_gbps:
            found.append(f"world {ws}: busbw {bw.busbw_gbps:.4g} GB/s < floor {cfg.collective_busbw_floor_gbps:g}")
    evidence.attach("all_reduce bus bandwidth", "\n".join(seen))
    check(not found, "FAB-COLLECTIVE", node.name, "; ".join(found))


@pytest.mark.row("FAB-COLLECTIVE")
def test_collective_across_nodes(rack, collective_runs, evidence):
    if len(rack.nodes) < 2:
        pytest.skip("the rack file lists one node")
    found = []
    for n in rack.nodes:
        res, out = _node(collective_runs, n.name, evidence)
        _require_results(n.name, res, out, [], across=True)
        found += [f"{n.name}: {f}" for f in judge.collective_across(out)]
    check(not found, "FAB-COLLECTIVE", "all nodes", "; ".join(found))


def _transport_findings(name, out, rack):
    if not out.transports:
        raise CouldNotObserve(f"{name}: NCCL printed no transport line (does NCCL_DEBUG=INFO reach the container, "
                              "and is the backend NCCL?)")
    return judge.transports(out, rack.fabric.healthy_transports)


@pytest.mark.row("FAB-TRANSPORT")
def test_transport(node, rack, collective_runs, evidence):
    res, out = _node(collective_runs, node.name)
    evidence.attach("NCCL transports", "via: " + (", ".join(out.transports) or "(none printed)")
                    + "\nnetwork: " + (", ".join(out.networks) or "(none printed)"))
    found = _transport_findings(node.name, out, rack)
    if not found:
        # healthy only on the whole output: a socket fallback may sit in the part that never came
        # back (the run across nodes, where the fabric matters most, prints last)
        _require_results(node.name, res, out, rack.fabric.collective_world_sizes, across=len(rack.nodes) > 1)
    check(not found, "FAB-TRANSPORT", node.name, "; ".join(found))
