"""FAB-COLLECTIVE, FAB-TRANSPORT: a minimal torch.distributed all_reduce inside the container,
world sizes 1, 2, 4 on each node, then across all nodes; and the transport NCCL chose for it.
The probe is shipped with the suite (rackgate/probes/collective_probe.py) and bounded per world."""
import pytest

from rackgate.fabric import judge
from rackgate.report.verdict import CouldNotObserve, check


def _observe(res, out, where):
    if not out.started:
        raise CouldNotObserve(f"{where}: the collective probe did not start (rc={res.rc}): "
                              f"{(res.stderr.strip().splitlines() or res.stdout.strip().splitlines() or ['no output'])[-1]}")
    if "torch=missing" in res.stdout or any("No module named 'torch'" in r for w in out.worlds.values()
                                              for r in w.results.values()):
        raise CouldNotObserve(f"{where}: the container's python has no torch ({out.torch})")


@pytest.mark.row("FAB-COLLECTIVE")
def test_collective(node, rack, collective_runs, evidence):
    res, out = collective_runs.get(node.name)
    evidence.attach("collective probe", res.evidence())
    _observe(res, out, node.name)
    found = judge.collective_worlds(out, rack.fabric.collective_world_sizes)
    check(not found, "FAB-COLLECTIVE", node.name, "; ".join(found))


def _across(rack, collective_runs, evidence):
    runs = collective_runs.get("*")
    for name, got in runs.items():
        if isinstance(got, Exception):
            raise got
        evidence.attach(f"collective probe across nodes: {name}", got[0].evidence())
        _observe(*got, name)
    return runs


@pytest.mark.row("FAB-COLLECTIVE")
def test_collective_across_nodes(rack, collective_runs, evidence):
    if len(rack.nodes) < 2:
        pytest.skip("the rack file lists one node")
    runs = _across(rack, collective_runs, evidence)
    ws = len(rack.nodes) * (rack.fabric.collective_ranks_per_node or rack.gpus_per_node)
    found = [f"{name}: {f}" for name, (_, out) in runs.items() for f in judge.collective_worlds(out, [ws])]
    check(not found, "FAB-COLLECTIVE", "all nodes", "; ".join(found))


@pytest.mark.row("FAB-TRANSPORT")
def test_transport(node, rack, collective_runs, evidence):
    res, out = collective_runs.get(node.name)
    _observe(res, out, node.name)
    evidence.attach("NCCL transports", "via: " + (", ".join(out.transports) or "(none printed)")
                    + "\nnetwork: " + (", ".join(out.networks) or "(none printed)"))
    if not out.transports and not out.networks and any(ws > 1 for ws in out.worlds):
        raise CouldNotObserve(f"{node.name}: NCCL printed no transport line (is NCCL_DEBUG=INFO reaching the "
                              "container, and is the backend NCCL?)")
    found = judge.transports(out, rack.fabric.healthy_transports)
    check(not found, "FAB-TRANSPORT", node.name, "; ".join(found))


@pytest.mark.row("FAB-TRANSPORT")
def test_transport_across_nodes(rack, collective_runs, evidence):
    if len(rack.nodes) < 2:
        pytest.skip("the rack file lists one node")
    runs = _across(rack, collective_runs, evidence)
    found = [f"{name}: {f}" for name, (_, out) in runs.items()
             for f in judge.transports(out, rack.fabric.healthy_transports)]
    check(not found, "FAB-TRANSPORT", "all nodes", "; ".join(found))
