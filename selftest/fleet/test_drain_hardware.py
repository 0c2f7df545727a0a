"""The fleet's drain hint names a hardware error finding: a sim rack whose node2 GPU 1 carries more
retired pages than the driver's threshold is drained with PLAT-RAS's finding as the reason."""
import json
import subprocess
import sys

import pytest

from ..harness import REPO, user_env
from . import racks

pytestmark = pytest.mark.suite


def test_drain_names_the_gpu_with_retired_pages_over_the_limit(tmp_path, monkeypatch):
    monkeypatch.setitem(racks.FAULTS, "sim-ras", ["bad-pages-over-limit@node2:1"])
    files = racks.write(tmp_path, ("sim-ras",))

    def fleet(*args):
        return subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *args], cwd=REPO, env=user_env(),
                              capture_output=True, text=True, timeout=600)
    p = fleet(*files, "--results", str(tmp_path / "res"), "--no-render", "--", "-m", "platform",
              "PLAT-RAS", "-p", "no:cacheprovider")
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    assert racks.findings(json.loads((tmp_path / "res" / "fleet.json").read_text())) == {"sim-ras": {("PLAT-RAS", "node2")}}
    drain = fleet("--drain-failed", "--results", str(tmp_path / "res"))
    line = next(ln for ln in drain.stdout.splitlines() if "state=drain" in ln)
    assert 'reason="PLAT-RAS [service-hardware]: ' in line and "gpu1" in line and "4424 retired VRAM pages, over the limit of 4423" in line, line
