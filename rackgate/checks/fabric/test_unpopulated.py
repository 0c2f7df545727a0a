"""FAB-UNPOPULATED: amd-smi fabric's BANDWIDTH / LATENCY / VERSION are reported as "not
populated", never as measurements. The check cannot be passed or failed by those values; it
fails when the suite's classification is not trustworthy: a value that is neither a
measurement nor a known unpopulated marker, or amd-smi and the driver's ualink sysfs disagreeing
on whether (and what) a field is."""
import pytest

from rackgate.gates import fabric as judge
from rackgate.probes import amdsmi
from rackgate.report.verdict import check


@pytest.mark.row("FAB-UNPOPULATED")
def test_unpopulated_fields(node, rack, rack_links, fabric_info, evidence):
    res, gpus = fabric_info.get(node.name)
    links = {l.gpu: l for l in rack_links.get()[node.name]}
    evidence.attach("amd-smi fabric --json", res.evidence())
    evidence.attach("classification", amdsmi.table(gpus) + "\n\n(driver ualink/bandwidth, latency: " + ", ".join(
        f"{l.where(node.name)}={l.bandwidth}/{l.latency}" for l in links.values()) + ")")
    found = judge.unpopulated(node.name, gpus, links)
    check(not found, "FAB-UNPOPULATED", node.name, "; ".join(found))
