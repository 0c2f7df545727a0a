"""verdict.json's `run` and fleet.json's time limit (issue 52), as functions: a run that did not
finish is never PASS, says how it ended and what it judged; a rack stopped by a time limit is marked
so."""
import json

import jsonschema
import pytest

from rackgate.fleet.gather import stopped
from rackgate.report import verdict_file as vf

pytestmark = pytest.mark.unit

NODES = [("node1", 1, "h1"), ("node2", 2, "h2")]
PASSED = [vf.Item("PLAT-DRIVER::node1", vf.PASS),
          vf.Item("PLAT-DRIVER::node2", vf.PASS)]
SCHEMA = json.loads(vf.SCHEMA.read_text())


@pytest.mark.parametrize("run", [{"state": vf.INTERRUPTED, "signal": "SIGTERM"}, {"state": vf.RUNNING, "signal": ""}])
def test_a_run_that_did_not_finish_is_never_pass(run):
    v = vf.build("r", NODES, 1, PASSED, run)
    jsonschema.validate(v, SCHEMA)
    assert v["verdict"] == vf.UNKNOWN.file and v["exit_code"] == 3 and v["run"] == run
    (why,) = [u["why"] for u in v["rack_unknown"] if u["test"] == vf.RUN]
    assert "2 item(s)" in why and (run["signal"] in why if run["signal"] else "killed" in why)


def test_a_finding_stays_a_finding_when_interrupted():
    items = [*PASSED[:1], vf.Item(PASSED[1].nodeid, vf.FAIL, row="PLAT-DRIVER", where="node2", seen="x")]
    v = vf.build("r", NODES, 1, items, {"state": vf.INTERRUPTED, "signal": "SIGHUP"})
    assert v["verdict"] == vf.FAIL.file and v["nodes"][1]["verdict"] == vf.FAIL.file


def test_a_finished_run_is_as_before():
    v = vf.build("r", NODES, 1, PASSED)
    assert v["verdict"] == vf.PASS.file and v["run"] == vf.DONE and v["rack_unknown"] == []


@pytest.mark.parametrize("run, rc, limited, says", [
    ({"state": vf.INTERRUPTED, "signal": "SIGTERM"}, 143, True, "SIGTERM"),
    ({"state": vf.INTERRUPTED, "signal": "SIGTERM"}, None, True, "--timeout"),
    ({"state": vf.RUNNING, "signal": ""}, None, True, "--timeout"),
    ({"state": vf.INTERRUPTED, "signal": "SIGHUP"}, 129, False, "SIGHUP"),
    ({"state": vf.RUNNING, "signal": ""}, 137, False, "SIGKILL"),
    (vf.DONE, 0, False, ""),
])
def test_fleet_marks_how_a_rack_run_was_stopped(run, rc, limited, says):
    got = stopped(vf.build("r", NODES, 1, PASSED, run), rc)
    assert got[0] is limited and says in got[1] and bool(got[1]) is (run != vf.DONE or rc is None)
