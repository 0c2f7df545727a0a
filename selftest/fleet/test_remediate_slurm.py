"""rackgate fleet --remediate on a real Slurm (slurm_cluster.py: munged, slurmctld and four slurmd
started here, one per sim node, `rgt-node1`..`rgt-node4` mapped by the rack file's
[remediate] slurm_nodes). One sim rack where most nodes fail: node2 module parameters at their
defaults (a driver reload clears it: selftest/fleet/sim_reload.py edits the sim's state), node3 a
wedged GPU (a reload does not clear it), node4 the same parameter fault but drained by hand.

One sequence, three sim runs (the fleet run, node2's and node3's re-tests), its steps asserted by
the tests below: a dry run changes nothing; the first loop (the default 50 % breaker) drains node2,
trips the breaker on node3 (node4's hand drain counts) and is killed by node2's remedy (SIGKILL, the
first time only); started again it reads the audit log, does not drain node2 again, runs the remedy
that was cut short, re-tests node2 and resumes it; the second loop after that touches node2 no more,
drains node3, its remedy runs and its re-test fails, so it stays drained with rackgate's reason;
node4 stays drained with the operator's reason throughout."""
import json
import shlex
import subprocess
import sys

import pytest

from ..harness import REPO, user_env
from . import racks
from .slurm_cluster import SlurmMissing, cluster

pytestmark = pytest.mark.system

NODES = ("rgt-node1", "rgt-node2", "rgt-node3", "rgt-node4")
FAULTS = ["params-default@node2", "gpu-wedged@node3", "params-default@node4"]
HAND = "by hand: PSU swap booked"
ROWS = ("PLAT-PARAMS", "PLAT-WEDGED")


def _rack(tmp, calls) -> str:
    racks.FAULTS["sim-loop"] = FAULTS
    try:
        (f,) = racks.write(tmp, ("sim-loop",))
    finally:
        del racks.FAULTS["sim-loop"]
    once = shlex.quote(str(tmp / "crashed-once"))
    # the first remedy ever run kills the loop that runs it (SIGKILL: a crash, nothing logged after)
    reload = f"echo $RACKGATE_SLURM_NODE >> {shlex.quote(str(calls))}; " \
             f"if [ ! -e {once} ]; then touch {once}; kill -9 $PPID; exit 137; fi; " \
             f"{shlex.quote(sys.executable)} -m selftest.fleet.sim_reload {shlex.quote(f)} $RACKGATE_NODE"
    with open(f, "a") as out:
        out.write("\n[remediate]\nslurm_nodes = {" + ", ".join(f'node{i} = "{n}"' for i, n in enumerate(NODES, 1)) + "}\n"
                  f"[[remediate.remedies]]\nrows = {json.dumps(list(ROWS))}\ncommand = {json.dumps(reload)}\ntimeout_s = 120\n")
    return f


@pytest.fixture(scope="module")
def seq(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("remediate")
    calls, res = tmp / "calls.txt", tmp / "res"
    rack = _rack(tmp, calls)
    select = ["-m", "platform", "-p", "no:cacheprovider", *ROWS]   # a row is a test path (issue 56)
    try:
        ctx = cluster(NODES)
        env, _, state = ctx.__enter__()
    except SlurmMissing as e:
        pytest.fail(str(e))
    run_env = {**user_env(), "SLURM_CONF": env["SLURM_CONF"]}

    def rg(*args, timeout=900):
        return subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *args], cwd=REPO, env=run_env,
                              capture_output=True, text=True, timeout=timeout)

    def sinfo():
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N|%T|%E"], env=env, capture_output=True, text=True, timeout=30)
        # a resumed node is `idle*` until slurmctld's next ping of its slurmd: the state without the flag
        return {n: (state.rstrip("*"), reason) for n, state, reason in (ln.split("|", 2) for ln in out.stdout.splitlines())}

    s: dict = {}
    try:
        s["fleet"] = rg(rack, "--results", str(res), "--no-render", "--", *select)
        subprocess.run(["scontrol", "update", "nodename=rgt-node4", "state=drain", f"reason={HAND}"], env=env, check=True,
                       timeout=30)
        before = sinfo()
        s["dry"] = rg("--remediate", "--results", str(res), "--dry-run")
        s["after_dry"], s["log_after_dry"] = sinfo(), (res / "remediate.jsonl").exists()
        assert s["after_dry"] == before
        s["crash"] = rg("--remediate", "--results", str(res))
        s["after_crash"] = sinfo()
        s["log_after_crash"] = [json.loads(ln) for ln in (res / "remediate.jsonl").read_text().splitlines()]
        s["first"] = rg("--remediate", "--results", str(res))
        s["after_first"] = sinfo()
        s["calls_first"] = calls.read_text().split() if calls.exists() else []
        s["second"] = rg("--remediate", "--results", str(res))
        s["after_second"] = sinfo()
        s["calls"] = calls.read_text().split() if calls.exists() else []
    finally:
        ctx.__exit__(None, None, None)
    assert not state.exists(), "the cluster's state directory was not removed"
    s["fleet_json"] = json.loads((res / "fleet.json").read_text())
    s["log"] = [json.loads(ln) for ln in (res / "remediate.jsonl").read_text().splitlines()]
    return s


def _out(p) -> str:
    return p.stdout[-4000:] + p.stderr[-2000:]


def test_the_fleet_run_finds_the_three_faults(seq):
    assert seq["fleet"].returncode == 1, _out(seq["fleet"])
    assert racks.findings(seq["fleet_json"]) == {"sim-loop": {("PLAT-PARAMS", "node2"), ("PLAT-WEDGED", "node3"),
                                                              ("PLAT-PARAMS", "node4")}}


def test_the_dry_run_prints_the_plan_and_changes_nothing(seq):
    p = seq["dry"]
    assert p.returncode == 4, _out(p)
    assert 'scontrol update nodename=rgt-node2 state=drain reason="rackgate: PLAT-PARAMS' in p.stdout, _out(p)
    assert "sim_reload" in p.stdout and "only if they all PASS: scontrol update nodename=rgt-node2 state=resume" in p.stdout
    assert "rgt-node3: refused (breaker)" in p.stdout and "rgt-node4: refused (not-ours)" in p.stdout, _out(p)
    assert not seq["log_after_dry"], "a dry run wrote the audit log"


def test_the_breaker_trips_when_most_nodes_fail(seq):
    p, st = seq["first"], seq["after_first"]
    assert p.returncode == 4 and "rgt-node3: refused (breaker)" in p.stdout, _out(p)
    assert st["rgt-node3"][0] == "idle", st   # the breaker drained nothing past the limit
    refusal = next(r for r in seq["log"] if r["action"] == "refuse" and r["guardrail"] == "breaker")
    assert refusal["node"] == "rgt-node3" and "3 of the fleet's 4 Slurm nodes" in refusal["why"], refusal


def test_a_crash_mid_remedy_restarts_from_the_log(seq):
    assert seq["crash"].returncode == -9, _out(seq["crash"])
    assert seq["after_crash"]["rgt-node2"][0] == "drained", seq["after_crash"]
    assert [(r["action"], r["status"]) for r in seq["log_after_crash"] if r.get("node") == "rgt-node2"][-1] == ("remediate", "start")
    assert "rgt-node2: drained by rackgate at" in seq["first"].stdout and "was cut short before" in seq["first"].stdout, \
        _out(seq["first"])


def test_a_fault_the_remedy_clears_ends_with_the_node_resumed(seq):
    assert seq["after_first"]["rgt-node2"][0] == "idle", seq["after_first"]
    mine = [(r["action"], r["status"]) for r in seq["log"] if r.get("node") == "rgt-node2"]
    assert mine == [("drain", "start"), ("drain", "done"), ("remediate", "start"),   # the crash
                    ("remediate", "start"), ("remediate", "done"),
                    ("retest", "start"), ("retest", "done"), ("resume", "start"), ("resume", "done")], mine
    drain, remedy, retest = (next(r for r in seq["log"] if r.get("node") == "rgt-node2" and r["action"] == a
                                  and r["status"] == "done") for a in ("drain", "remediate", "retest"))
    assert drain["read_back"].startswith("rackgate: PLAT-PARAMS node2 -- ") and "gpu_recovery" in drain["read_back"], drain
    assert remedy["exit"] == 0 and "cleared ['params-default@node2']" in remedy["output"], remedy
    assert retest["verdict"] == "PASS" and [i["outcome"] for i in retest["items"]] == ["PASS"], retest


def test_a_fault_the_remedy_does_not_clear_leaves_the_node_drained_with_the_reason(seq):
    p, st = seq["second"], seq["after_second"]
    assert p.returncode == 1, _out(p)
    state, reason = st["rgt-node3"]
    assert state == "drained" and reason.startswith("rackgate: PLAT-WEDGED node3 -- "), st
    retest = next(r for r in seq["log"] if r.get("node") == "rgt-node3" and r["action"] == "retest" and r["status"] == "done")
    assert retest["verdict"] == "FAIL" and not any(r.get("node") == "rgt-node3" and r["action"] == "resume" for r in seq["log"])


def test_the_second_loop_repeats_no_finished_action(seq):
    assert seq["calls_first"] == ["rgt-node2", "rgt-node2"], seq["calls_first"]   # the crash's, the restart's
    assert seq["calls"] == ["rgt-node2", "rgt-node2", "rgt-node3"], seq["calls"]
    assert seq["after_second"]["rgt-node2"][0] == "idle"
    assert sum(r["action"] == "drain" and r["status"] == "done" and r["node"] == "rgt-node2" for r in seq["log"]) == 1


def test_a_node_drained_by_hand_stays_drained(seq):
    for st in (seq["after_crash"], seq["after_first"], seq["after_second"]):
        assert st["rgt-node4"] == ("drained", HAND), st
    assert not any(r.get("node") == "rgt-node4" and r["action"] in ("drain", "remediate", "resume") for r in seq["log"])
    assert any(r.get("node") == "rgt-node4" and r.get("guardrail") == "not-ours" for r in seq["log"])
