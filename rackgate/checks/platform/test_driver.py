"""PLAT-DRIVER, PLAT-IFOE, PLAT-PARAMS: amdgpu and ifoe are loaded, amdgpu with the bring-up parameters."""
import pytest

from rackgate.gates import plat as judge
from rackgate.probes import modules
from rackgate.report.verdict import check


@pytest.mark.row("PLAT-DRIVER")
def test_driver_loaded(node, evidence):
    facts = modules.driver(node.host)
    evidence.attach("lsmod", facts.lsmod_text)
    missing = judge.driver(facts)
    check(not missing, "PLAT-DRIVER", node.name, "; ".join(missing))


@pytest.mark.row("PLAT-IFOE")
def test_ifoe_loaded(node, rack, evidence):
    facts = modules.driver(node.host)
    evidence.attach("lsmod", facts.lsmod_text)
    missing = judge.ifoe(facts, rack.platform.ifoe_module)
    check(not missing, "PLAT-IFOE", node.name, "; ".join(missing))


@pytest.mark.row("PLAT-PARAMS")
def test_amdgpu_params(node, rack, evidence):
    want = rack.platform.amdgpu_params
    got = modules.amdgpu_params(node.host, tuple(want))
    evidence.attach("amdgpu parameters", "\n".join(f"{k}={v}" for k, v in got.items()))
    bad = judge.params(got, want)
    check(not bad, "PLAT-PARAMS", node.name, "; ".join(bad))
