"""An exception in rackgate's own code (neither a finding nor a could-not-observe) is ERROR
"rackgate internal error ... at file:line" with its traceback in the report: never FAILED."""
import json
import os

import pytest

from .harness import run_suite

pytestmark = pytest.mark.suite

PLANT = """
import rackgate.gates.plat as judge
from rackgate.transport.host import Host


def _probe_bug(self, pattern):
    return {}["planted probe bug"]


def _judge_bug(*a, **k):
    return 1 / 0


def pytest_configure(config):
    Host.glob = _probe_bug        # what the PLAT-SHM probe (shm.segments) reads through
    judge.gpus = _judge_bug       # the PLAT-GPUS judge (called by its declared item, gates.plat.gpus_item)
"""


def test_a_bug_in_a_probe_or_a_judge_is_an_internal_error_not_a_failure(tmp_path):
    (tmp_path / "rg_plant.py").write_text(PLANT)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    run = run_suite(tmp_path, "-p", "rg_plant", "PLAT-SHM", "PLAT-GPUS",
                    "-p", "no:xdist", env=env, allure=True)
    shm_ids = {k for k in run.outcomes if "PLAT-SHM" in k}
    gpu_ids = {k for k in run.outcomes if "PLAT-GPUS" in k}
    assert shm_ids and gpu_ids, (run.stdout[-2000:], run.stderr[-2000:])
    assert not run.ids("failed"), run.stdout[-3000:]
    assert run.ids("error") == shm_ids | gpu_ids, run.stdout[-3000:]
    for k in shm_ids:
        msg = run.outcomes[k].message
        assert "rackgate internal error (a bug in rackgate, not a finding about the rack)" in msg, msg
        assert "KeyError: 'planted probe bug'" in msg and "rg_plant.py:" not in msg.split(" at ")[0], msg
    for k in gpu_ids:
        msg = run.outcomes[k].message
        assert "ZeroDivisionError" in msg and "rackgate internal error" in msg, msg
    assert "at rackgate/gates/plat.py:" in run.outcomes[next(iter(gpu_ids))].message
    assert "at rackgate/probes/shm.py:" in run.outcomes[next(iter(shm_ids))].message
    # the traceback is attached to the Allure result of each errored check
    results = [json.loads(p.read_text()) for p in (tmp_path / "allure").glob("*-result.json")]
    attached = [r for r in results if any(a["name"] == "rackgate internal error: traceback"
                                          for a in r.get("attachments", []))]
    assert len(attached) == len(shm_ids | gpu_ids), [r.get("name") for r in results]
    assert all(r["status"] != "failed" for r in attached)
