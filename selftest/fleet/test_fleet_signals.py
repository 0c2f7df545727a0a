"""A rack's run stopped by its scheduler (issue 52): the task that runs it under Slurm or Kubernetes
(rackgate.fleet.task) is sent SIGTERM -- as a container stop sends it to its first process only --,
passes it on, and the run ends with its reports on disk marked interrupted; fleet.json marks the
rack time-limited, its items judged before the signal kept. A real task process and a real signal;
a plugin holds the run at an item until the signal comes (an event, not a timer)."""
import json
import os
import signal
import subprocess
import sys

import pytest

from rackgate.fleet import gather, plan
from rackgate.transport import interrupt

from ..harness import REPO, user_env
from ..test_cleanup import wait_for
from ..test_signals import HOLD, MARGIN_S
from . import racks

pytestmark = pytest.mark.suite


def test_a_time_limited_rack_is_marked_so_in_fleet_json(tmp_path):
    (tmp_path / "rg_hold.py").write_text(HOLD)
    mark = tmp_path / "holding"
    runs = plan.make(racks.write(tmp_path, ["sim-b"]), tmp_path / "res", [*racks.SELECT, "-p", "rg_hold"])
    path = plan.save(tmp_path / "res", runs)
    env = {**user_env(), "JOB_COMPLETION_INDEX": "0", "RG_HOLD_MARK": str(mark), "RG_HOLD_N": "9",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    task = subprocess.Popen([sys.executable, "-m", "rackgate.fleet.task", str(path)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert wait_for(mark.exists, 300, task), task.communicate()[0][-2000:] if task.poll() is not None else "no hold"
        task.send_signal(signal.SIGTERM)   # to the task alone: it passes it on
        out = task.communicate(timeout=interrupt.BOUND_S + MARGIN_S)[0]
    finally:
        if task.poll() is None:
            os.killpg(task.pid, signal.SIGKILL)
            task.wait()
    assert task.returncode == 128 + signal.SIGTERM, out[-2000:]
    res = tmp_path / "res"
    assert (res / "sim-b" / "rc").read_text().strip() == str(128 + signal.SIGTERM)
    fleet = gather.gather(res, runs, {})
    (rack,) = fleet["racks"]
    assert rack["time_limited"] is True and "SIGTERM" in rack["stopped"], rack
    assert rack["verdict"] != "PASS" and any("interrupted by SIGTERM" in u["why"] for u in rack["unknown"]), rack
    verdict = json.loads((res / "sim-b" / "verdict.json").read_text())
    assert verdict["run"] == {"state": "interrupted", "signal": "SIGTERM"}
    assert len(verdict["items"]) == 8 and mark.read_text() not in {i["test"] for i in verdict["items"]}
    assert json.loads((res / "fleet.json").read_text())["racks"][0]["time_limited"] is True
