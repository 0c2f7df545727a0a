"""The platform suite against THIS machine as a one-node 'real' rack (local transport, no sysroot):
real lsmod, dmesg, docker, /proc. There is no GPU and usually no docker daemon here, so most
checks fail; each must fail in one line, with a verdict or a could-not-observe, never a traceback."""
import os

import pytest

from rackgate.ids import place_of
from selftest.harness import run_suite
from selftest.matrix import is_explained

pytestmark = pytest.mark.suite

RACK = """
name = "this-machine"
silicon = "A0"                          # so PLAT-PREFIX runs too
gpus_per_node = 4
container = "rackgate-selftest-absent"  # a name no real container has: nothing runs inside one
image = "rocm/fw-bringup:gfx1250-atom-20260918-ep8"
atom_path = "/app/ATOM"

[[nodes]]
name = "here"
transport = "local"
data_ip = "127.0.0.1"
tray = 1
"""


def test_platform_on_a_node_without_gpus_fails_in_one_line(tmp_path):
    rack = tmp_path / "here.toml"
    rack.write_text(RACK)
    run = run_suite(tmp_path, "-m", "platform", f"--rack={rack}", timeout=240)
    assert run.outcomes, run.stdout[-2000:] + run.stderr[-2000:]
    assert len(run.outcomes) >= 15, sorted(run.outcomes)
    assert all(place_of(tid) == "here" for tid in run.outcomes), sorted(run.outcomes)
    for tid, o in run.outcomes.items():
        if o.status in ("failed", "error"):
            assert is_explained(o.message), f"{tid}: {o.message[:500]}"
            assert "Traceback" not in o.message, f"{tid}: {o.message[:1500]}"
    # no GPU here: with a drm class the GPU list is a verdict; without one (and no amd-smi) it is
    # could-not-observe naming what was missing -- never a crash
    gpus = run.outcomes["PLAT-GPUS::here"]
    if os.path.isdir("/sys/class/drm"):
        assert gpus.status == "failed" and "PLAT-GPUS" in gpus.message, gpus.message
    else:
        assert gpus.status == "error" and "no amd-smi and no /sys/class/drm" in gpus.message, gpus.message
