"""The survey's cells are the gates' judges (the ones the row's pytest items call): where the two
used to disagree, the verdict rule decides. Each case edits one tray of a 2-tray sim to what a
real node could show and reads the survey's cell."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackgate import config
from rackgate.errors import UnrecognisedOutput
from rackgate.gates import fabric as fab_judge
from rackgate.gates import plat as plat_judge
from rackgate.probes.modules import DriverFacts
from rackgate.probes.ualink import Link, parse_link
from rackgate.sim.rack import SimRack, build, override
from rackgate.survey import run
from rackgate.survey.model import FAIL, PASS, UNOBSERVED

from ..harness import REPO

pytestmark = pytest.mark.suite

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


@pytest.fixture
def sim2(tmp_path: Path) -> Iterator[SimRack]:
    rack = config.load(REPO / "racks" / "sim18.toml")
    sim = build(override(override(rack, "sim.nodes", 2), "sim.faults", []), workdir=str(tmp_path / "sim"))
    yield sim
    sim.stop()


def _ualink(sim: SimRack, node: str) -> list[Path]:
    return sorted((sim.dir / node / "root").glob("sys/class/drm/card*/device/ualink"))


def test_a_state_the_driver_does_not_print_is_could_not_observe(sim2: SimRack) -> None:
    """Before: the survey called it 'stuck' (FAIL) where the FAB-STATE item said could-not-observe."""
    (_ualink(sim2, "node2")[1] / "accel_state").write_text("linkup\n")
    r1, r2 = run.survey(sim2.rack)
    assert r1.cells["links"].status == PASS
    assert r2.cells["links"].status == UNOBSERVED and "'linkup', not a state the amdgpu driver prints" in r2.cells[
        "links"].seen
    assert r2.gpus[1] == UNOBSERVED and r2.gpus[0] == PASS


def test_no_ualink_attributes_is_could_not_observe(sim2: SimRack) -> None:
    """Before: 'this amdgpu has no UALink' (FAIL); the item: the attribute file missing, could not observe."""
    for d in _ualink(sim2, "node2"):
        (d / "accel_state").unlink()
    _, r2 = run.survey(sim2.rack)
    assert r2.cells["links"].status == UNOBSERVED and "accel_state is missing" in r2.cells["links"].seen
    assert r2.cells["pod"].status == UNOBSERVED


def test_a_card_count_off_is_could_not_observe_on_the_links(sim2: SimRack) -> None:
    """Before: FAIL on 'links active'; the items: which card is which GPU cannot be told (the count
    is PLAT-GPUS's finding, a row the survey has no cell for)."""
    cards = sorted((sim2.dir / "node2" / "root").glob("sys/class/drm/card[0-9]*"))
    cards[-1].unlink() if cards[-1].is_symlink() else shutil.rmtree(cards[-1])
    _, r2 = run.survey(sim2.rack)
    assert {r2.cells[k].status for k in ("links", "accel", "pod")} == {UNOBSERVED}, r2.cells


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


def test_every_declared_row_s_cell_runs_its_declaration(sim2: SimRack, monkeypatch: pytest.MonkeyPatch) -> None:
    """A survey cell whose row is declared (gates/declare.py) runs that declaration's probe and
    judge, nothing wired beside it: change the declared judge and the cell follows, on the tray
    the judge names, and on no other."""
    import dataclasses

    from rackgate.gates import declare
    from rackgate.survey.model import CHECKS
    rows = [(key, row) for key, row, _ in CHECKS if row in declare.declared()]
    assert {row for _, row in rows} >= {"PLAT-GPUS", "PLAT-FREE", "PLAT-TUNED"}
    for _, row in rows:
        check = declare.declared()[row]
        monkeypatch.setitem(declare._CHECKS, row, dataclasses.replace(
            check, judge=lambda got, rack, where, row=row: [f"{row} says {where}"] if where == "node2" else []))
    r1, r2 = run.survey(sim2.rack)
    for key, row in rows:
        assert r1.cells[key].status == PASS, (key, r1.cells[key])
        assert r2.cells[key] == type(r2.cells[key])(FAIL, f"{row} says node2"), (key, r2.cells[key])
