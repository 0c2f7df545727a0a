"""PLAT-DRIVER, PLAT-IFOE, PLAT-PARAMS: amdgpu and ifoe are loaded, amdgpu with the bring-up parameters."""
import pytest

from rackgate.probes import modules
from rackgate.report.verdict import check


@pytest.mark.row("PLAT-DRIVER")
def test_driver_loaded(node, evidence):
    facts = modules.driver(node.host)
    evidence.attach("lsmod", facts.lsmod_text)
    missing = [what for what, ok in (("no amdgpu line in lsmod", facts.amdgpu), ("no /dev/kfd", facts.kfd)) if not ok]
    check(not missing, "PLAT-DRIVER", node.name, "; ".join(missing))


@pytest.mark.row("PLAT-IFOE")
def test_ifoe_loaded(node, rack, evidence):
    facts = modules.driver(node.host)
    evidence.attach("lsmod", facts.lsmod_text)
    mod = rack.platform.ifoe_module
    check(mod in facts.modules, "PLAT-IFOE", node.name, f"no {mod} line in lsmod"
          + (" (amdgpu is loaded: it came up without the UALink-over-Ethernet stack)" if facts.amdgpu else ""))


@pytest.mark.row("PLAT-PARAMS")
def test_amdgpu_params(node, rack, evidence):
    want = rack.platform.amdgpu_params
    got = modules.amdgpu_params(node.host, tuple(want))
    check(any(v is not None for v in got.values()), "PLAT-PARAMS", node.name,
          "/sys/module/amdgpu/parameters is missing: amdgpu is not loaded (see PLAT-DRIVER)")
    evidence.attach("amdgpu parameters", "\n".join(f"{k}={v}" for k, v in got.items()))
    bad = [f"{k}={got[k] if got[k] is not None else '(missing)'} (want {v})" for k, v in want.items() if got[k] != v]
    check(not bad, "PLAT-PARAMS", node.name, ", ".join(bad))
