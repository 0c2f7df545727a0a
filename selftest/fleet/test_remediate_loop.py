"""The remediation loop's decisions (rackgate/fleet/remediate.py) against a Slurm held in memory
and stand-in re-tests and remedies: the rate cap, a stale finding re-checked first, a crash
mid-loop resumed from the audit log without repeating a finished action, no resume of a node
someone else drained again, an operator's mark; the sinfo parser on mutated real lines; the
validity function. Real Slurm and the sim: test_remediate_slurm.py."""
import json
import os
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackgate.config.remediate import Remedy
from rackgate.fleet import remediate, slurm_nodes, validity
from rackgate.fleet.audit import AuditLog
from rackgate.fleet.slurm import SlurmError
from rackgate.report import validity as row_validity

pytestmark = pytest.mark.unit

# sinfo -h -N -o '%N|%T|%E' on Slurm 22.05 (the self-test cluster's, slurm_cluster.py)
SINFO = "n1|idle|none\nn2|drained|rackgate: PLAT-PARAMS node2 -- gpu_recovery=-1\nn3|idle*|none\nn4|drained|by hand: PSU\n"


class FakeSlurm:
    def __init__(self, states):
        self.now = {n: slurm_nodes.NodeState(n, s, r) for n, (s, r) in states.items()}
        self.calls = []

    def states(self):
        return dict(self.now)

    def drain(self, node, reason):
        self.calls.append(("drain", node))
        self.now[node] = slurm_nodes.NodeState(node, "drained", reason)

    def resume(self, node):
        self.calls.append(("resume", node))
        self.now[node] = slurm_nodes.NodeState(node, "idle", "")


def _target(n, remedies=(Remedy(rows=["PLAT-PARAMS"], command="reload"),), expires=None):
    f = {"row": "PLAT-PARAMS", "where": f"node{n}", "seen": "gpu_recovery=-1", "test": f"t[node{n}]",
         "means": "", "do": "", "action_class": "reboot-or-reload-driver", "node": f"node{n}", "host": "h"}
    return remediate.Target("r", f"node{n}", "h", f"n{n}", [f["test"]], [f], list(remedies), not remedies, 0.0,
                            time.time() + 3600 if expires is None else expires, "fp")


def _loop(tmp_path, slurm, verdicts=("PASS",), exits=(0,), guard=None):
    retests, remedies = list(verdicts), list(exits)
    seen = {"retest": [], "remedy": []}

    def retest(t, step):
        seen["retest"].append((t.slurm, step))
        v = retests.pop(0)
        return v, [{"test": t.tests[0], "outcome": v, "seen": ""}]

    def run(t, m):
        seen["remedy"].append(t.slurm)
        code = remedies.pop(0)
        if isinstance(code, BaseException):
            raise code
        return {"exit": code, "output": "", "seconds": 0.0}
    loop = remediate.Loop(slurm, AuditLog(tmp_path / "log.jsonl"), guard or remediate.Guard(), retest, run, say=lambda s: None)
    return loop, seen


NODES = [f"n{i}" for i in range(1, 5)]


def test_a_remedy_that_clears_the_fault_ends_resumed(tmp_path):
    slurm = FakeSlurm({n: ("idle", "") for n in NODES})
    loop, seen = _loop(tmp_path, slurm)
    out = loop.run([_target(2)], NODES)
    assert slurm.calls == [("drain", "n2"), ("resume", "n2")] and out.exit_code() == 0 and out.resumed == ["n2"]
    assert seen == {"retest": [("n2", "retest0")], "remedy": ["n2"]}


def test_the_rate_cap_stops_drains(tmp_path):
    slurm = FakeSlurm({n: ("idle", "") for n in NODES})
    loop, _ = _loop(tmp_path, slurm, verdicts=("FAIL",), guard=remediate.Guard(max_share=1.0, max_actions=1))
    out = loop.run([_target(2), _target(3)], NODES)
    assert slurm.calls == [("drain", "n2")] and out.exit_code() == remediate.EXIT_GUARDRAIL
    assert [r["guardrail"] for r in loop.log.records if r["action"] == "refuse"] == ["rate-cap"]


def test_a_stale_finding_is_rechecked_before_any_drain(tmp_path):
    slurm = FakeSlurm({n: ("idle", "") for n in NODES})
    loop, seen = _loop(tmp_path, slurm, verdicts=("PASS",))
    out = loop.run([_target(2, expires=time.time() - 1)], NODES)
    assert slurm.calls == [] and seen["retest"] == [("n2", "recheck")] and out.exit_code() == 0


def test_a_crash_mid_remedy_restarts_from_the_log_without_repeating_the_drain(tmp_path):
    slurm = FakeSlurm({n: ("idle", "") for n in NODES})
    two = [_target(2, remedies=(Remedy(rows=["PLAT-PARAMS"], command="a"), Remedy(action_classes=["re-run"], command="b")))]
    loop, seen = _loop(tmp_path, slurm, exits=(0, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        loop.run(two, NODES)
    again, seen2 = _loop(tmp_path, slurm, exits=(0,))
    out = again.run(two, NODES)
    assert slurm.calls == [("drain", "n2"), ("resume", "n2")] and out.resumed == ["n2"]
    assert seen["remedy"] == ["n2", "n2"] and seen2["remedy"] == ["n2"]   # remedy 0 finished: not run again
    third, seen3 = _loop(tmp_path, slurm)
    assert third.run(two, NODES).resumed == ["n2"] and seen3 == {"retest": [], "remedy": []}


def test_a_node_drained_again_by_someone_else_is_not_resumed(tmp_path):
    slurm = FakeSlurm({n: ("idle", "") for n in NODES})
    loop, _ = _loop(tmp_path, slurm, exits=(0,))
    orig = loop.retest

    def retest_while_an_admin_drains(t, step):
        slurm.now["n2"] = slurm_nodes.NodeState("n2", "drained", "admin: keep out")
        return orig(t, step)
    loop.retest = retest_while_an_admin_drains
    out = loop.run([_target(2)], NODES)
    assert slurm.calls == [("drain", "n2")] and slurm.now["n2"].reason == "admin: keep out" and not out.resumed


def test_without_a_remedy_the_node_waits_for_an_operator_mark(tmp_path):
    slurm = FakeSlurm({n: ("idle", "") for n in NODES})
    loop, seen = _loop(tmp_path, slurm)
    out = loop.run([_target(2, remedies=())], NODES)
    assert out.exit_code() == 1 and slurm.now["n2"].drained and seen["retest"] == []
    AuditLog(tmp_path / "log.jsonl").add("operator-fixed", "done", node="n2")
    again, seen2 = _loop(tmp_path, slurm)
    assert again.run([_target(2, remedies=())], NODES).resumed == ["n2"] and seen2["retest"] == [("n2", "retest1")]


def test_the_breaker_counts_nodes_already_out_of_service(tmp_path):
    slurm = FakeSlurm({"n1": ("down", "not responding"), "n2": ("idle", ""), "n3": ("idle", ""), "n4": ("idle", "")})
    loop, _ = _loop(tmp_path, slurm, verdicts=("FAIL",))
    out = loop.run([_target(2), _target(3)], NODES)
    assert slurm.calls == [("drain", "n2")] and out.exit_code() == remediate.EXIT_GUARDRAIL


def test_sinfo_lines_parse():
    got = slurm_nodes.parse(SINFO)
    assert got["n2"].drained and got["n2"].ours and not got["n4"].ours and got["n4"].out_of_service
    assert got["n3"].state == "idle" and not got["n3"].out_of_service and got["n1"].reason == ""
    for bad in ("", "n1 idle none\n", "|idle|x\n"):
        with pytest.raises(SlurmError):
            slurm_nodes.parse(bad)


@given(st.integers(0, 3), st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                                  max_size=80))
def test_mutated_sinfo_lines_parse_or_refuse_in_one_line(i, junk):
    lines = SINFO.splitlines()
    lines[i] = lines[i][: len(lines[i]) // 2] + junk
    try:
        got = slurm_nodes.parse("\n".join(lines))
    except SlurmError as e:
        assert "\n" not in str(e)
    else:
        assert all(s.name and s.state for s in got.values())


@given(st.text(max_size=300))
def test_a_drain_reason_is_one_line_marked_and_bounded(seen):
    r = slurm_nodes.reason("PLAT-PARAMS", "node2", seen)
    assert r.startswith(slurm_nodes.MARK) and len(r) <= 200 and '"' not in r and "\n" not in r


def test_validity_reads_valid_until_then_judged_at_and_its_rows_validity_then_the_files_time(tmp_path):
    v = tmp_path / "verdict.json"
    v.write_text("{}")
    os.utime(v, (1000, 1000))
    assert validity.expires_at({"valid_until": "2026-12-07T20:00:00Z"}, v) == 1796673600.0
    ras = {"judged_at": "2026-12-07T20:00:00Z", "row": "PLAT-RAS"}   # an error counter: minutes (the catalogue's)
    assert validity.expires_at(ras, v, 10) == 1796673600.0 + row_validity.of("PLAT-RAS").span.total_seconds()
    assert 0 < row_validity.of("PLAT-RAS").span.total_seconds() < 3600
    assert validity.expires_at({"judged_at": 500}, v, 10) == 1010   # not a time the verdict file writes: the file's
    assert validity.expires_at({}, v, 10) == 1010
    assert validity.expires_at({}, tmp_path / "none.json") == 0.0


def test_the_audit_log_skips_a_line_cut_short_and_refuses_a_bad_one(tmp_path):
    log = AuditLog(tmp_path / "l.jsonl")
    log.add("drain", "done", key="k", node="n2")
    with open(tmp_path / "l.jsonl", "a") as f:
        f.write('{"format": "rackgate-reme')
    assert AuditLog(tmp_path / "l.jsonl").done("k")["node"] == "n2"
    (tmp_path / "b.jsonl").write_text('nope\n' + json.dumps(log.records[0]) + "\n")
    with pytest.raises(ValueError, match="b.jsonl:1"):
        AuditLog(tmp_path / "b.jsonl")


def _fleet(tmp_path, remediate_toml):
    from . import racks
    (f,) = racks.write(tmp_path, ("sim-a",))
    with open(f, "a") as out:
        out.write("\n" + remediate_toml)
    find = [{"row": row, "where": node, "seen": "x", "means": "", "do": "", "action_class": cls, "node": node, "host": "127.0.0.1",
             "test": f"{row}::{node}"}
            for row, cls, node in (("PLAT-PARAMS", "reboot-or-reload-driver", "node2"), ("PLAT-RAS", "service-hardware", "node2"),
                                   ("PLAT-WEDGED", "reboot-or-reload-driver", "node3"))]
    nodes = [{"node": f"node{i}", "tray": i, "host": "127.0.0.1", "verdict": "FAIL" if i in (2, 3) else "PASS",
              "action_class": "none"} for i in range(1, 5)]
    return {"format": "rackgate-fleet/1", "verdict": "FAIL", "exit_code": 1, "racks": [
        {"rack": "sim-a", "rack_file": f, "results": str(tmp_path / "none"), "exit_code": 1, "verdict": "FAIL",
         "action_class": "service-hardware", "findings": find, "unknown": [], "nodes": nodes}]}


def test_each_finding_takes_the_first_remedy_naming_its_row_or_class(tmp_path):
    fleet = _fleet(tmp_path, '[remediate]\nslurm_nodes = {node2 = "gpu-02"}\n'
                             '[[remediate.remedies]]\nrows = ["PLAT-WEDGED"]\ncommand = "bmc restart"\n'
                             '[[remediate.remedies]]\naction_classes = ["reboot-or-reload-driver"]\ncommand = "reload"\n')
    ts, names = remediate.targets(fleet, remediate.Guard())
    assert names == ["127.0.0.1", "gpu-02"]
    two, three = ts
    assert (two.slurm, [m.command for m in two.remedies], two.needs_operator) == ("gpu-02", ["reload"], True)  # PLAT-RAS: none
    assert (three.slurm, [m.command for m in three.remedies], three.needs_operator) == ("127.0.0.1", ["bmc restart"], False)
    assert two.tests == ["PLAT-PARAMS::node2", "PLAT-RAS::node2"]
    assert two.expires == 0.0   # no verdict file, no time: stale, re-checked before any action


@pytest.mark.parametrize("toml, said", [
    ('[remediate]\nslurm_nodes = {node9 = "x"}\n', "names no node of rack sim-a: node9"),
    ('[[remediate.remedies]]\nrows = ["PLAT-NOPE"]\ncommand = "x"\n', "no catalogue row 'PLAT-NOPE'"),
    ('[[remediate.remedies]]\naction_classes = ["reboot"]\ncommand = "x"\n', "no action class 'reboot'"),
    ('[[remediate.remedies]]\ncommand = "x"\n', "names the rows or action_classes"),
])
def test_a_bad_remediate_table_is_one_line(tmp_path, toml, said):
    with pytest.raises(ValueError, match=said) as e:
        remediate.targets(_fleet(tmp_path, toml), remediate.Guard())
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("args, said", [
    (["a.toml", "--remediate"], "--remediate takes only --results DIR"),
    (["--dry-run", "--results", "x"], "--dry-run and --mark-fixed go with --remediate"),
    (["--remediate", "--results", "nowhere"], "no readable fleet.json"),
    (["--remediate", "--results", "nowhere", "--max-drain-share", "1.5"], "--max-drain-share 1.5"),
])
def test_remediate_usage_errors_are_one_line_and_exit_2(tmp_path, capsys, args, said):
    from rackgate.fleet import cli
    assert cli.main([a.replace("nowhere", str(tmp_path / "nowhere")) for a in args]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1, err


def test_mark_fixed_appends_the_operators_mark(tmp_path, capsys):
    from rackgate.fleet import cli
    assert cli.main(["--remediate", "--results", str(tmp_path), "--mark-fixed", "gpu-02", "--note", "reseated"]) == 0
    (rec,) = AuditLog(tmp_path / "remediate.jsonl").records
    assert (rec["action"], rec["node"], rec["note"]) == ("operator-fixed", "gpu-02", "reseated")


def test_nothing_is_done_to_a_node_while_its_jobs_still_run(tmp_path):
    class Busy(FakeSlurm):
        def drain(self, node, reason):
            super().drain(node, reason)
            self.now[node] = slurm_nodes.NodeState(node, "draining", reason)
    slurm = Busy({n: ("idle", "") for n in NODES})
    loop, seen = _loop(tmp_path, slurm, guard=remediate.Guard(drain_wait_s=0))
    out = loop.run([_target(2)], NODES)
    assert seen == {"retest": [], "remedy": []} and out.exit_code() == 1 and slurm.now["n2"].state == "draining"
    assert [r["action"] for r in loop.log.records][-1] == "wait-jobs"
