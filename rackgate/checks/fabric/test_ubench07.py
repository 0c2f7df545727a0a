"""FAB-P2P, FAB-BW, FAB-LEFTOVER, FAB-DMESG: ubench07 over triangles of node pairs.

The rounds run once per session (rackgate/fixtures/fabric.py: ubench_runs); each pair's checks judge
their own pair. The exporter/listener side is started first and waited for; every wait is
bounded; the suite ends only the processes it started.
"""
import pytest

from rackgate.errors import CouldNotObserve
from rackgate.fabric import pairs
from rackgate.fixtures.nodes import discovered_cards
from rackgate.gates import fabric as judge
from rackgate.probes import accel
from rackgate.report.verdict import check


def _run(ubench_runs, tool, pair, evidence):
    result = ubench_runs.get(tool)
    run = result.runs[pair.id]
    for side in (run.server, run.client):
        if side is not None:
            evidence.attach(f"{tool} {side.role} on {side.node}",
                            f"$ {side.command}\n{side.output}" + ("\n(ended by rackgate at its bound)"
                                                                  if side.ended_by_suite else ""))
    if run.error:
        raise CouldNotObserve(f"{pair.where}: {tool} could not be run: {run.error}")
    return result, run


@pytest.mark.row("FAB-P2P")
def test_p2p(pair, ubench_runs, evidence):
    _, run = _run(ubench_runs, "p2p", pair, evidence)
    found = judge.p2p(run)
    check(not found, "FAB-P2P", pair.where, "; ".join(found))


@pytest.mark.row("FAB-BW")
def test_bandwidth(pair, rack, ubench_runs, evidence, facts):
    result, run = _run(ubench_runs, "bw", pair, evidence)
    figures = judge.bw_figures(run)
    table = "\n".join(f"{k}: " + (", ".join(f"{d} {v:.1f}" for d, v in f.items()) if f else "no table")
                      for k, f in ((k, judge.bw_figures(r)) for k, r in result.runs.items()))
    evidence.attach("GB/s of every pair this run", table)
    for d, v in (figures or {}).items():
        facts.record(f"fabric.ubench07.{d}_gbps", v, where=pair.id, unit="GB/s", row="FAB-BW")
    found = judge.bandwidth(run, result.runs, rack.fabric)
    check(not found, "FAB-BW", pair.where, "; ".join(found))


@pytest.mark.row("FAB-LEFTOVER")
def test_no_leftover(node, rack, ubench_runs, evidence):
    scans = []
    for tool in ("p2p", "bw"):
        result = ubench_runs.get(tool)
        scans += result.scans_of(node.name)
        if result.ended:
            evidence.attach(f"{tool}: processes rackgate started and ended at their bound", "\n".join(result.ended))
    if not scans:
        if not any(node.name in p for p in pairs.triangles([n.name for n in rack.nodes])):
            pytest.skip(f"{node.name} takes part in no ubench07 pair (the rack file lists one node)")
        raise CouldNotObserve(f"{node.name}: no ubench07 pair with it ran (its peers were unreachable)")
    evidence.attach("ps scans", "\n".join(
        f"{s.when}: " + (s.error or (", ".join(f"{p.pid} {p.args}" for p in s.found) or "none")) for s in scans))
    errors = [s.error for s in scans if s.error]
    if errors:
        raise CouldNotObserve(f"{node.name}: {errors[0]}")
    found = judge.leftovers(scans)
    if not found:
        judge.no_unsure_leftovers(scans)  # could not observe: a process that may be the suite's own
    check(not found, "FAB-LEFTOVER", node.name, "; ".join(found))


@pytest.mark.row("FAB-DMESG")
def test_dmesg_clean(pair, rack, hosts, ubench_runs, evidence, pytestconfig):
    runs = [_run(ubench_runs, tool, pair, evidence)[1] for tool in ("p2p", "bw")]
    for run in runs:
        for node, lines in run.dmesg.items():
            evidence.attach(f"dmesg on {node} during {run.tool}", "\n".join(l.raw for l in lines) or "(nothing new)")
    found, note = judge.dmesg_pair(runs, accel.accel_map(rack, discovered_cards(pytestconfig, hosts)))
    check(not found, "FAB-DMESG", pair.where, "; ".join(found) + (f" -- {note}" if note else ""))
