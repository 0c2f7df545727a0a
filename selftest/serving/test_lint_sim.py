"""LAUNCH-LINT on the sim's own launch: the sim's launch command is clean (builds the sim; the
rules alone: test_lint.py)."""
import pytest

from rackgate import config
from rackgate.atom.server import launch_command
from rackgate.gates import lint
from rackgate.sim.rack import SHIPPED_RACK

pytestmark = pytest.mark.suite


def test_the_sim_launch_is_clean():
    from rackgate.sim.rack import build
    sim = build(config.load(SHIPPED_RACK))
    try:
        r = sim.rack
        facts = lint.Facts(hbm_gib=r.platform.hbm_gib, data_plane_nic="enp1s0f1", profile_dir=r.serving.profile_dir)
        assert lint.lint(launch_command(r, r.nodes[0], 0), dict(r.launch.env), facts) == []
    finally:
        sim.stop()
