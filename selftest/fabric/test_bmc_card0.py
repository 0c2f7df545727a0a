"""A tray whose BMC video card (ASPEED, driver ast) holds /sys/class/drm/card0, its GPUs card1..4
([sim] bmc_card0): every sysfs-reading check passes on it as on the plain layout, and a stuck
link on its last GPU (card4) FAILS naming gpu3 and card4 -- the suite once read card0..3 for
GPUs 0..3, so card0 was "could not observe" and card4 never read."""
import re

import pytest

from rackgate import config
from rackgate.sim.rack import SHIPPED_RACK, build
from rackgate.survey import run
from rackgate.survey.model import FAIL, PASS, UNOBSERVED

from ..harness import run_suite

pytestmark = pytest.mark.suite

SYSFS_CHECKS = ("-m", "fabric or platform", "-k", "FAB-ACCEL-ID or FAB-TRAINING or FAB-STATE or FAB-POD "
                "or FAB-UNPOPULATED or PLAT-GPUS or PLAT-DRIVER")


def _rack(tmp_path, *faults: str):
    """The shipped sim rack with node2's card0 a BMC card (and the shipped healthy baseline)."""
    text = SHIPPED_RACK.read_text()
    text = re.sub(r"(?m)^faults = \[\].*$", f"faults = {list(faults)!r}\nbmc_card0 = [\"node2\"]".replace("'", '"'),
                  text, count=1)
    text = re.sub(r'(?m)^baseline = "', f'baseline = "{SHIPPED_RACK.parent}/', text, count=1)
    p = tmp_path / "bmc.toml"
    p.write_text(text)
    return p


def test_a_bmc_card0_tray_passes_every_sysfs_check_when_healthy(tmp_path):
    rack = _rack(tmp_path)
    r = run_suite(tmp_path, f"--rack={rack}", f"--baseline={SHIPPED_RACK.parent / 'sim-baseline.json'}",
                  *SYSFS_CHECKS)
    assert r.outcomes, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.not_passed <= {k for k in r.outcomes if "PLAT-PREFIX" in k}, {k: r.outcomes[k].message[:300]
                                                                           for k in r.not_passed}
    assert "FAB-STATE::node2-card3" in r.ids("passed")  # ids stay GPU-numbered
    assert "PLAT-GPUS::node2" in r.ids("passed")


def test_a_stuck_link_on_card4_fails_on_gpu3_of_that_node(tmp_path):
    rack = _rack(tmp_path, "stuck-link@node2:3")
    r = run_suite(tmp_path, f"--rack={rack}", f"--baseline={SHIPPED_RACK.parent / 'sim-baseline.json'}",
                  *SYSFS_CHECKS)
    state = "FAB-STATE::node2-card3"
    accel = "FAB-ACCEL-ID::node2-card3"
    assert r.ids("failed") == {state, accel}, {k: r.outcomes[k].message[:300] for k in r.not_passed}
    assert "FAB-STATE [node2/gpu3 (card4, 0000:75:00.0)]" in r.outcomes[state].message
    assert "unconfigured" in r.outcomes[state].message
    assert not r.ids("error") - {k for k in r.outcomes if "PLAT-PREFIX" in k}


def _survey(tmp_path, fault: str) -> dict:
    sim = build(config.load(_rack(tmp_path, fault)), workdir=str(tmp_path / "sim"))
    try:
        return {r.node: r for r in run.survey(sim.rack)}
    finally:
        sim.stop()


def test_the_survey_reads_the_discovered_cards(tmp_path):
    by = _survey(tmp_path, "stuck-link@node2:3")
    node2 = by["node2"]
    assert node2.gpus == {0: PASS, 1: PASS, 2: PASS, 3: FAIL}
    assert node2.cells["links"].seen.startswith("gpu3 (card4, 0000:75:00.0): accel_state=unconfigured")
    assert all(c.ok for c in by["node1"].cells.values())


def test_a_missing_amdgpu_card_fails_the_survey_tray_and_blames_no_gpu(tmp_path):
    """Three amdgpu cards where the rack file says four (the listing read whole): the tray's GPUs
    cell (PLAT-GPUS, its declared probe and judge) FAILS with the count; its links cannot be told
    apart (could not observe); which GPU is gone cannot be told, so no GPU is marked failed."""
    by = _survey(tmp_path, "gpu-missing@node2:3")
    gpus = by["node2"].cells["gpus"]
    assert gpus.status == FAIL and "3 DRM cards bound to amdgpu in /sys/class/drm, expected 4" in gpus.seen
    assert "other DRM cards: card0 0000:02:00.0 driver=ast" in gpus.seen
    assert by["node2"].cells["links"].status == UNOBSERVED
    assert FAIL not in by["node2"].gpus.values()
