"""PLAT-GPUS: the expected GPUs, all with the same HBM size (every KV figure depends on it)."""
import pytest

from rackgate.gates import plat as judge
from rackgate.probes import gpus
from rackgate.report.verdict import check


@pytest.mark.row("PLAT-GPUS")
def test_gpu_count_and_hbm(node, rack, evidence, facts):
    p = rack.platform
    got = gpus.read(node.host)
    evidence.attach(f"GPUs ({got.source})", got.raw, kind="json" if got.raw.lstrip().startswith(("{", "[")) else "text")
    for g in got.gpus:
        if g.hbm_gib is not None:
            facts.record("platform.gpu.hbm_gib", round(g.hbm_gib, 1), where=f"{node.name}/gpu{g.index}", unit="GiB",
                         row="PLAT-GPUS")
    facts.record("platform.gpu.count", len(got.gpus), where=node.name, row="PLAT-GPUS")
    bad = judge.gpus(got, rack.gpus_per_node, p.hbm_gib, p.hbm_tolerance_gib)
    check(not bad, "PLAT-GPUS", node.name, "; ".join(bad))
