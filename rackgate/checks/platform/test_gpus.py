"""PLAT-GPUS: the expected GPUs, all with the same HBM size (every KV figure depends on it), and
as many DRM cards bound to amdgpu (the cards the per-GPU sysfs checks read, rackgate.probes.drm)."""
import pytest

from rackgate.fixtures.nodes import gpu_map
from rackgate.gates import plat as judge
from rackgate.probes import gpus
from rackgate.report.verdict import CouldNotObserve, check


@pytest.mark.row("PLAT-GPUS")
def test_gpu_count_and_hbm(node, rack, evidence, facts, pytestconfig):
    p = rack.platform
    got = gpus.read(node.host)
    evidence.attach(f"GPUs ({got.source})", got.raw, kind="json" if got.raw.lstrip().startswith(("{", "[")) else "text")
    for g in got.gpus:
        if g.hbm_gib is not None:
            facts.record("platform.gpu.hbm_gib", round(g.hbm_gib, 1), where=f"{node.name}/gpu{g.index}", unit="GiB",
                         row="PLAT-GPUS")
    facts.record("platform.gpu.count", len(got.gpus), where=node.name, row="PLAT-GPUS")
    bad = judge.gpus(got, rack.gpus_per_node, p.hbm_gib, p.hbm_tolerance_gib)
    unseen = None
    try:
        cards = gpu_map(pytestconfig, node.host)
    except CouldNotObserve as e:
        unseen = e
    else:
        evidence.attach("DRM cards (/sys/class/drm, PCI order)", "\n".join(
            [f"gpu{g}: {c.summary()}" for g, c in enumerate(cards.gpus)] + [f"not a GPU: {c.summary()}"
                                                                             for c in cards.others]))
        found = cards.mismatch(rack.gpus_per_node)
        if found and got.source != "sysfs":  # sysfs: the same cards, already counted above
            bad.append(found)
    check(not bad, "PLAT-GPUS", node.name, "; ".join(bad))
    if unseen is not None:
        raise unseen
