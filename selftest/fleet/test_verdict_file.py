"""verdict.json: per node and GPU from item ids, validated against the shipped schema; rackgate's
exit codes from pytest's status and the verdict; drain lines only for trays with findings."""
import json

import jsonschema
import pytest

from rackgate.cli import exit_code
from rackgate.fleet import drain
from rackgate.report import verdict_file as vf

pytestmark = pytest.mark.unit

SCHEMA = json.loads(vf.SCHEMA.read_text())
NODES = [("node1", 1, "h1"), ("node2", 2, "h2"), ("node3", 3, "h3")]


def _items():
    return [vf.Item("t::test_params[node1]", vf.PASS), vf.Item("t::test_params[node2]", vf.FAIL, "PLAT-PARAMS", "node2", "noretry=-1"),
            vf.Item("t::test_state[node1-card2]", vf.FAIL, "FAB-STATE", "node1/card2", "accel_state=unconfigured"),
            vf.Item("t::test_params[node3]", vf.UNKNOWN, seen="could not observe: ssh: exit 255"),
            vf.Item("t::test_sanity", vf.PASS)]


def test_per_node_and_gpu_verdicts_with_findings_and_action_classes():
    v = vf.build("r", NODES, 4, _items())
    jsonschema.validate(v, SCHEMA)
    by = {n["node"]: n for n in v["nodes"]}
    assert v["verdict"] == "FAIL" and v["exit_code"] == 1 and v["action_class"] == "reboot-or-reload-driver"
    assert [g["verdict"] for g in by["node1"]["gpus"]] == ["PASS", "PASS", "FAIL", "PASS"]
    assert by["node2"]["verdict"] == "FAIL" and by["node2"]["findings"][0]["do"].startswith("these are load-time")
    assert by["node3"]["verdict"] == "UNKNOWN" and by["node3"]["findings"] == [] and by["node3"]["unknown"]


def test_nothing_run_or_only_unobserved_is_unknown_never_pass():
    assert vf.build("r", NODES, 4, [])["verdict"] == "UNKNOWN"
    rack_wide = vf.build("r", NODES, 4, [vf.Item("t::test_sanity", vf.PASS)])
    assert rack_wide["verdict"] == "PASS" and {n["verdict"] for n in rack_wide["nodes"]} == {"UNKNOWN"}
    assert "no check of this run named this node" in rack_wide["nodes"][0]["unknown"][0]["why"]
    only = vf.build("r", NODES, 4, [vf.Item("t::x[node1]", vf.UNKNOWN, seen="tool missing")])
    assert (only["verdict"], only["exit_code"]) == ("UNKNOWN", 3)
    jsonschema.validate(vf.unknown("r", "the run did not finish"), SCHEMA)


def test_a_rerun_merges_over_the_old_items():
    old = vf.build("r", NODES, 4, _items())
    new = vf.build("r", NODES, 4, [vf.Item("t::test_params[node2]", vf.PASS), vf.Item("t::test_params[node3]", vf.PASS)])
    merged = vf.rebuild(old, new)
    assert {n["node"]: n["verdict"] for n in merged["nodes"]} == {"node1": "FAIL", "node2": "PASS", "node3": "PASS"}


def test_exit_codes_are_distinct():
    fail, unknown, ok = ({"verdict": s} for s in ("FAIL", "UNKNOWN", "PASS"))
    assert [exit_code(0, ok), exit_code(1, fail), exit_code(4, None), exit_code(5, None), exit_code(1, unknown),
            exit_code(1, None), exit_code(2, None)] == [0, 1, 2, 2, 3, 3, 3]


def test_drain_only_trays_with_findings_never_unknown():
    v = vf.build("r", NODES, 4, _items())
    fleet = {"racks": [{"rack": "r", "nodes": v["nodes"],
                        "findings": [{**f, "node": n["node"]} for n in v["nodes"] for f in n["findings"]]}]}
    lines = [drain.show(c) for c in drain.commands(fleet)]
    assert lines == ['scontrol update nodename=h1 state=drain reason="FAB-STATE [reboot-or-reload-driver]: accel_state=unconfigured"',
                     'scontrol update nodename=h2 state=drain reason="PLAT-PARAMS [reboot-or-reload-driver]: noretry=-1"']


def test_the_fault_matrix_judges_each_runs_verdict_file(tmp_path):
    from selftest import matrix as mx
    from selftest.harness import SuiteRun, read_verdict
    v = vf.build("r", NODES, 4, _items())
    assert mx.verdict_problems(SuiteRun(1, "", "", {}, v), "PLAT-PARAMS") == []
    assert mx.verdict_problems(SuiteRun(1, "", "", {}, v), "PLAT-DMESG") == [
        "verdict.json has no PLAT-DMESG finding (its findings: ['FAB-STATE', 'PLAT-PARAMS'])"]
    assert mx.verdict_problems(SuiteRun(1, "", "", {}, v), None), "the healthy rack's verdict names findings"
    (tmp_path / "v.json").write_text(json.dumps({**v, "verdict": "GREEN"}))
    data, problem = read_verdict(tmp_path / "v.json")
    assert data is None and "off the schema" in problem and "'GREEN' is not one of" in problem
    assert "not a readable verdict file" in read_verdict(tmp_path / "missing.json")[1]
