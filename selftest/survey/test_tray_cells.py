"""The survey's tray cells on a sim rack (the judges alone: test_tray_judges.py)."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackgate import config
from rackgate.sim.rack import SimRack, build, override
from rackgate.survey import run
from rackgate.survey.model import FAIL, PASS, UNOBSERVED

from ..harness import REPO

pytestmark = pytest.mark.suite


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


def test_every_declared_row_s_cell_runs_its_declaration(sim2: SimRack, monkeypatch: pytest.MonkeyPatch) -> None:
    """A survey cell whose row is declared (the registry, rackgate/registry) runs that declaration's
    probe and judge, nothing wired beside it: change the declared judge and the cell follows, on
    the tray the judge names, and on no other."""
    import dataclasses

    from rackgate import registry
    from rackgate.gates import declare
    from rackgate.survey.model import CHECKS
    rows = [(key, row) for key, row, _ in CHECKS if row in registry.checks()]
    assert {row for _, row in rows} >= {"PLAT-GPUS", "PLAT-FREE", "PLAT-TUNED", "PLAT-PARAMS", "FAB-STATE", "FAB-ACCEL-ID",
                                        "FAB-POD"}
    per = {row: registry.checks()[row].per for _, row in rows}
    for _, row in rows:
        check = registry.checks()[row]
        monkeypatch.setitem(declare._CHECKS, row, dataclasses.replace(
            check, judge=lambda got, rack, where, row=row: [f"{row} says {where}"] if where.split("/")[0] == "node2" else []))
    r1, r2 = run.survey(sim2.rack)
    for key, row in rows:
        assert r1.cells[key].status == PASS, (key, r1.cells[key])
        if per[row] in ("gpu", "rack-gpu"):  # judged card by card: each card of the tray named
            assert r2.cells[key].status == FAIL and r2.cells[key].seen.count(f"{row} says node2/gpu") == 4, r2.cells[key]
        else:
            assert r2.cells[key] == type(r2.cells[key])(FAIL, f"{row} says node2"), (key, r2.cells[key])
