"""The survey's cells are the gates' judges (the ones the row's pytest items call): where the two
used to disagree, the verdict rule decides. Each case edits one tray of a 2-tray sim to what a
real node could show and reads the survey's cell."""
from __future__ import annotations

import pytest

from rackgate.errors import UnrecognisedOutput
from rackgate.gates import fabric as fab_judge
from rackgate.gates import plat as plat_judge
from rackgate.probes.modules import DriverFacts
from rackgate.probes.ualink import Link, parse_link
from rackgate.survey.model import FAIL, PASS, UNOBSERVED

pytestmark = pytest.mark.unit

ACTIVE, ERROR = ["active", "ready"], ["error"]


def _link(state: str | None) -> Link:
    return parse_link(2, {"accel_state": state, "accel_id": "6", "ppod_id": "p", "vpod_id": "1"})


@pytest.mark.parametrize("state, verdict", [("active", PASS), ("error", FAIL), ("unconfigured", FAIL),
                                            ("linkup", UNOBSERVED), ("", UNOBSERVED), (None, UNOBSERVED)])
def test_link_state_judge(state: str | None, verdict: str) -> None:
    """A state the driver does not print, or none, is an output not recognised: never 'stuck'."""
    try:
        found = fab_judge.link_state("node2/card2", _link(state), ACTIVE, ERROR, 4)
    except UnrecognisedOutput as e:
        assert verdict == UNOBSERVED and "node2/card2" in str(e)
        return
    assert (FAIL if found else PASS) == verdict, found


def test_pod_outliers_names_the_odd_links_and_refuses_nothing() -> None:
    ref, odd = fab_judge.pod_outliers({"a/0": ("p", "1"), "a/1": ("p", "1"), "b/0": ("q", "1")})
    assert ref == ("p", "1") and odd == ["b/0 ppod=q vpod=1"]
    with pytest.raises(UnrecognisedOutput):
        fab_judge.pod_outliers({})


def test_params_judge() -> None:
    want = {"noretry": "1", "gpu_recovery": "0"}
    assert plat_judge.params({"noretry": "1", "gpu_recovery": "0"}, want) == []
    assert plat_judge.params({"noretry": "-1", "gpu_recovery": None}, want) == [
        "noretry=-1 (want 1), gpu_recovery=(missing) (want 0)"]
    assert "amdgpu is not loaded" in plat_judge.params({"noretry": None, "gpu_recovery": None}, want)[0]


def test_bringup_ports_leave_an_attached_server_its_own() -> None:
    assert plat_judge.bringup_ports(8000, 29556, 29557) == [8000, 29500, 29556, 29557]
    assert plat_judge.bringup_ports(8000, 29556, 29557, attached=True) == [29556, 29557]


def test_driver_and_ifoe_judges() -> None:
    loaded = DriverFacts({"amdgpu": 1, "ifoe": 0}, True, "")
    assert plat_judge.driver(loaded) == [] and plat_judge.ifoe(loaded, "ifoe") == []
    bare = DriverFacts({"amdgpu": 1}, False, "")
    assert plat_judge.driver(bare) == ["no /dev/kfd"]
    assert plat_judge.ifoe(bare, "ifoe") == ["no ifoe line in lsmod (amdgpu is loaded: it came up without the "
                                              "UALink-over-Ethernet stack)"]


