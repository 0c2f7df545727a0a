"""FAB-ACCEL-ID, FAB-TRAINING: every link numbered rack-wide and trained the healthy way (FAB-STATE
and FAB-POD, all nodes in one fabric domain, are declared in rackgate/gates/fabric.py)."""
import pytest

from rackgate.errors import CouldNotObserve
from rackgate.gates import fabric as judge
from rackgate.probes.accel import expected_accel_id
from rackgate.report.verdict import check


@pytest.mark.row("FAB-ACCEL-ID")
def test_accel_id(gpu, rack, rack_links, fabric_info, evidence, facts):
    links = rack_links.get()
    link = judge.readable(gpu.where, links[gpu.node.name][gpu.index], ("accel_id_raw",))
    smi_error: CouldNotObserve | None = None
    try:
        _, smi = fabric_info.get(gpu.node.name)
    except CouldNotObserve as e:  # amd-smi unreadable: the driver's value may still show the fault
        smi, smi_error = [], e
    smi_gpu = next((g for g in smi if g.gpu == gpu.index), None)
    expected = expected_accel_id(gpu.node.cfg.tray, gpu.index, rack.gpus_per_node)
    others = judge.same_accel_id(link, gpu.where, {l.where(n): l for n, ls in links.items() for l in ls})
    evidence.attach("accel_id", f"expected {expected} (tray {gpu.node.cfg.tray}, gpu {gpu.index})\n"
                    f"ualink/accel_id: {link.accel_id_raw}\namd-smi ACCELERATOR_ID: "
                    f"{smi_gpu.accelerator_id_raw if smi_gpu else '(GPU not in amd-smi fabric output)'}")
    facts.record("ualink.accel_id", link.accel_id_raw, where=gpu.key, row="FAB-ACCEL-ID")
    try:
        found = judge.accel_id(gpu.where, expected, link, smi_gpu, others, smi_read=True)
    except CouldNotObserve:
        if smi_error is not None:
            raise smi_error from None
        raise
    check(not found, "FAB-ACCEL-ID", gpu.where, "; ".join(found))


@pytest.mark.row("FAB-TRAINING")
def test_link_training(gpu, rack, rack_links, baseline, facts, evidence, pytestconfig):
    """Compared with the card's peers on the node, then with the healthy boot recorded by
    --record-baseline. With no baseline the check cannot judge and says so (it never passes
    silently); while recording, only the peer comparison is made and the values are stored."""
    node_links = rack_links.get()[gpu.node.name]
    link = judge.readable(gpu.where, node_links[gpu.index], ("local_accels", "station_lane_en_bitmap"))
    peers = {l.where(gpu.node.name): l for l in node_links}
    evidence.attach("link training", "\n".join(
        f"{w}: local_accels={l.local_accels} station_lane_en_bitmap={l.station_lane_en_bitmap}"
        for w, l in peers.items()))
    found = judge.training_vs_peers(link, peers)
    check(not found, "FAB-TRAINING", gpu.where, "; ".join(found))
    for name, value in judge.training_values(link).items():
        facts.record(name, value, where=gpu.key, row="FAB-TRAINING")
    if pytestconfig.option.record_baseline:
        return
    if baseline is None:
        raise CouldNotObserve(f"{gpu.where}: no baseline recorded: run `pytest -m fabric --record-baseline` "
                              f"on a healthy boot (rack file 'baseline' = {rack.baseline}), then compare")
    found, missing = judge.training_vs_baseline(gpu.key, link, baseline)
    check(not found, "FAB-TRAINING", gpu.where, "; ".join(found))
    if missing:
        raise CouldNotObserve(f"{gpu.where}: the baseline {baseline.describe()} has no {', '.join(missing)} for this "
                              "GPU: record one on a healthy boot of this rack (--record-baseline)")
