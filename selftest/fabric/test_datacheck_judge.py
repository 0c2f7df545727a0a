"""FAB-DATACHECK without processes: the verdict lines' parser (lines as the shipped probe prints
them, and mutated), who is blamed for located wrong data, the bisection's search against model
faults (a GPU, a link across the halves, a fault that needs the whole rack), and the item's
verdict on passes built from verdict lines."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackgate.config.model import Rack
from rackgate.errors import CouldNotObserve
from rackgate.fabric import datacheck as run
from rackgate.gates import datacheck as judge
from rackgate.gates.declare import Across
from rackgate.probes import datacheck
from rackgate.probes.datacheck import Bisection, Outcome, Pass, Wrong

pytestmark = pytest.mark.unit

MEMBERS = [f"node{n}/gpu{g}" for n in (1, 2) for g in (0, 1)]
# lines as datacheck_probe.py prints them (a 2x2 world on this machine's gloo, node 1's probe)
START = "RGDATA-START pid=19959 torch=2.13.0+cpu node=1 ranks=2,3 ws=4 run=whole"
OK = ('RGDATA {"checked": 221936, "elapsed_s": 0.832, "iters": 3, "iters_done": 3, "member": "0:1", "pid": 20727, '
      '"rank": 1, "run": "whole", "status": "ok", "wrong": [], "ws": 4}')
WRONG = ('RGDATA {"checked": 5032, "iters": 3, "iters_done": 3, "member": "1:1", "pid": 20800, "rank": 3, "run": "whole", '
         '"status": "wrong", "ws": 4, "wrong": [{"bytes": 32768, "count": 512, "dst": 3, "first_iter": 0, '
         '"first_offset": 170, "iters": 3, "last_offset": 297, "op": "all_gather", "src": 0, "src_member": "0:0"}, '
         '{"bytes": 32768, "count": 32, "dst": 3, "first_iter": 2, "first_offset": 170, "iters": 1, '
         '"last_offset": 177, "op": "reduce_scatter", "src": -1, "src_member": "sum"}]}')
ABSENT = ('RGDATA {"checked": 0, "error": "did not arrive within 3s", "member": "0:0", "missing": [2, 3], "pid": 31440, '
          '"rank": 0, "run": "whole", "status": "absent", "wrong": [], "ws": 4}')


def one_pass(*lines: str, node: str = "node1", members=MEMBERS) -> Pass:
    p = Pass("whole", list(members))
    datacheck.parse(p, node, "\n".join([START, *lines]) + "\n")
    return p


def test_verdict_lines_are_read_with_their_place():
    p = one_pass(OK, WRONG)
    assert p.verdicts[1].status == "ok" and p.verdicts[1].member == "node1/gpu1"
    w = p.verdicts[3].wrong
    assert w[0] == Wrong("all_gather", 32768, "node1/gpu0", "node2/gpu1", 512, 170, 297, 0, 3)
    assert w[1].src == "sum" and w[1].first_iter == 2
    assert "512 wrong elements node1/gpu0 -> node2/gpu1 at offsets 170..297, first in iteration 0" in w[0].describe()
    assert p.nodes["node1"].started and p.nodes["node1"].torch == "2.13.0+cpu"
    assert not p.ok and p.silent() == ["node1/gpu0", "node2/gpu0"]


def test_a_line_cut_by_a_killed_process_is_not_read():
    p = Pass("whole", list(MEMBERS))
    datacheck.parse(p, "node1", START + "\n" + OK[:60])
    assert p.verdicts == {} and p.unparsed == []


def test_absent_names_who_never_arrived():
    p = one_pass(ABSENT)
    assert p.absent() == ["node2/gpu0", "node2/gpu1"]
    assert "never arrived: node2/gpu0, node2/gpu1" in p.summary()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([OK, WRONG, ABSENT]), st.integers(min_value=7, max_value=400), st.text(max_size=8))
def test_mutated_lines_never_read_as_healthy(line, at, junk):
    """A verdict line mutated anywhere is read as what it says or set aside as unrecognised --
    never a crash, and never a healthy pass of every rank."""
    p = Pass("whole", list(MEMBERS))
    datacheck.parse(p, "node1", START + "\n" + line[:at] + junk + line[at:] + "\n")
    assert not p.ok
    for v in p.verdicts.values():
        assert v.status in datacheck.STATUSES


@pytest.mark.parametrize("status", ["healthy", "OK", ""])
def test_an_unknown_status_is_not_a_verdict(status):
    p = Pass("whole", list(MEMBERS))
    datacheck.parse(p, "node1", START + "\n" + OK.replace('"status": "ok"', json.dumps({"status": status})[1:-1]) + "\n")
    assert p.verdicts == {} and p.unparsed


# --- blame -----------------------------------------------------------------------------------
def w(op, src, dst, count=4):
    return Wrong(op, 32768, src, dst, count, 10, 13, 0, 1)


def test_a_gpu_that_receives_wrong_data_from_several_sources_is_blamed_alone():
    got = judge.blame([w("all_reduce", "sum", "node2/gpu1"), w("dispatch", "node1/gpu0", "node2/gpu1"),
                       w("all_gather", "node1/gpu1", "node2/gpu1")])
    assert list(got) == ["node2/gpu1"] and got["node2/gpu1"][0].startswith("receives wrong data")


def test_a_gpu_whose_data_arrives_wrong_everywhere_is_the_sender():
    got = judge.blame([w("dispatch", "node2/gpu0", d) for d in MEMBERS if d != "node2/gpu0"]
                      + [w("combine", "node2/gpu0", "node1/gpu0")])
    assert list(got) == ["node2/gpu0"] and "3 ranks received wrong elements" in got["node2/gpu0"][0]


def test_one_wrong_pair_names_both_ends():
    got = judge.blame([w("dispatch", "node1/gpu1", "node2/gpu0")])
    assert sorted(got) == ["node1/gpu1", "node2/gpu0"] and "the pair node1/gpu1 -> node2/gpu0" in got["node2/gpu0"][0]


def test_a_wrong_sum_on_one_rank_is_that_rank():
    assert list(judge.blame([w("all_reduce", "sum", "node1/gpu1")])) == ["node1/gpu1"]


# --- bisection -------------------------------------------------------------------------------
RACK16 = [f"node{n}/gpu{g}" for n in range(1, 5) for g in range(4)]


def model(bad):
    """fails(worlds) of a model fault: a world fails when `bad(world)`; records the runs."""
    runs: list[list[str]] = []

    def fails(worlds):
        runs.extend(worlds)
        return [bad(set(w)) for w in worlds]
    return fails, runs


def test_a_gpu_fault_is_found_in_about_log2_n_runs():
    fails, runs = model(lambda w: "node3/gpu2" in w and len(w) > 1)
    b = run.bisect(RACK16, fails, cap=16)
    assert (b.kind, b.culprit) == ("gpu", ["node3/gpu2"])
    assert len(runs) <= 2 * 4 + 2  # halves two at a time down to a pair, then each with a third


def test_a_link_across_the_halves_is_found_and_said_as_such():
    fails, runs = model(lambda w: {"node1/gpu3", "node3/gpu0"} <= w)
    b = run.bisect(RACK16, fails, cap=16)
    assert (b.kind, b.culprit) == ("link", ["node1/gpu3", "node3/gpu0"])
    assert "passes on each half" in b.note and len(runs) <= 12
    assert len({tuple(r) for r in runs}) == len(runs)  # no world run twice


def test_a_fault_that_needs_the_whole_rack_is_said_as_such():
    fails, _ = model(lambda w: len(w) == 16)
    b = run.bisect(RACK16, fails, cap=16)
    assert b.kind == "whole" and b.culprit == RACK16 and "fails on the whole" in b.note


def test_the_bisection_stops_at_its_cap_and_at_a_run_that_could_not_run():
    fails, runs = model(lambda w: {"node1/gpu3", "node3/gpu0"} <= w)
    assert run.bisect(RACK16, fails, cap=3).kind == "capped" and len(runs) <= 3
    b = run.bisect(RACK16, lambda worlds: [None for _ in worlds], cap=16)
    assert b.kind == "inconclusive" and b.culprit == RACK16


def test_sizes_go_from_the_minimum_to_the_maximum():
    rack = Rack.model_validate({"nodes": [{"name": "n1", "transport": "local", "data_ip": "127.0.0.1", "tray": 1}],
                                "fabric": {"datacheck_min_bytes": 4096, "datacheck_max_bytes": 2**30}})
    assert run.sizes(rack) == [4096, 65536, 2**20, 2**24, 2**28, 2**30]


# --- the item --------------------------------------------------------------------------------
RACK = Rack.model_validate({"nodes": [{"name": "node1", "transport": "local", "data_ip": "127.0.0.1", "tray": 1},
                                      {"name": "node2", "transport": "local", "data_ip": "127.0.0.1", "tray": 2}],
                            "gpus_per_node": 2})


def item(o: Outcome, node: str, gpu: int):
    return judge.datacheck_item(Across(node, {"node1": o, "node2": o}, {}, gpu), RACK, f"{node}/gpu{gpu}")


def ok_line(rank):
    return OK.replace('"rank": 1', f'"rank": {rank}')


def test_the_gpu_that_received_wrong_data_fails_and_the_others_pass():
    p = one_pass(ok_line(0), ok_line(1), ok_line(2), WRONG.replace(
        '"count": 32, "dst": 3, "first_iter": 2', '"count": 32, "dst": 3, "first_iter": 2'))
    datacheck.parse(p, "node2", START.replace("node=1", "node=2") + "\n")
    o = Outcome(p)
    assert item(o, "node2", 1) and "receives wrong data" in item(o, "node2", 1)[0]
    assert item(o, "node1", 0) == [] and item(o, "node2", 0) == []


def test_a_hang_located_by_the_bisection_fails_the_link_and_clears_the_rest():
    hung = ('RGDATA {"checked": 0, "at": "dispatch 2048 B iteration 0", "error": "no progress", "member": "0:0", '
            '"rank": 0, "run": "whole", "status": "killed", "wrong": [], "ws": 4}')
    whole = one_pass(*[hung.replace('"rank": 0', f'"rank": {r}') for r in range(4)])
    datacheck.parse(whole, "node2", START.replace("node=1", "node=2") + "\n")
    clean = Pass("bisect 1", ["node1/gpu1", "node2/gpu0"])
    datacheck.parse(clean, "node1", START + "\n" + ok_line(0) + "\n" + ok_line(1) + "\n")
    o = Outcome(whole, Bisection(["node1/gpu0", "node2/gpu1"], "link"), [clean])
    got = item(o, "node1", 0)
    assert got and "link node1/gpu0 <-> node2/gpu1" in got[0] and "bisect 1" in got[0]
    assert item(o, "node1", 1) == []  # passed in a run without the fault
    with pytest.raises(CouldNotObserve):
        item(Outcome(whole, Bisection(["node1/gpu0"], "inconclusive", "a run could not run")), "node1", 0)


def test_a_probe_that_did_not_start_is_could_not_observe_never_a_fault():
    p = Pass("whole", list(MEMBERS))
    p.nodes["node1"] = datacheck.NodeOutput("node1", error="node1: python3: not found")
    p.nodes["node2"] = datacheck.NodeOutput("node2", started=True, torch="2.13.0+cpu")
    with pytest.raises(CouldNotObserve, match="python3: not found"):
        item(Outcome(p), "node1", 0)
    with pytest.raises(CouldNotObserve, match="could not run on node1"):
        item(Outcome(p), "node2", 0)


def test_a_cut_output_is_never_bisected_into_a_fault():
    """A pass where a rank printed no verdict (its probe's output was cut or lost) is not run
    again and not judged a hang: the silent rank is could-not-observe, the others keep their own."""
    p = one_pass(ok_line(0), ok_line(1))
    datacheck.parse(p, "node2", START.replace("node=1", "node=2") + "\n")
    assert not run.needs_bisection(p)
    o = Outcome(p)
    assert item(o, "node1", 0) == []
    with pytest.raises(CouldNotObserve, match="no verdict from this rank"):
        item(o, "node2", 1)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=2, max_value=24), st.data())
def test_any_single_gpu_or_link_fault_is_named_within_the_cap(n, data):
    """Whatever the rack's size and wherever the fault: a GPU that fails every world it is in (but
    a world of one) is named alone; a link fails only worlds holding both ends and is named as the
    pair -- or, where the rack is too small to tell them apart, the pair is named; never a GPU
    outside the fault, never more runs than the cap."""
    members = [f"node{i // 4 + 1}/gpu{i % 4}" for i in range(n)]
    a = data.draw(st.sampled_from(members))
    if data.draw(st.booleans()):
        fails, runs = model(lambda w: a in w and len(w) > 1)
        b = run.bisect(members, fails, cap=16)
        assert set(b.culprit) <= set(members) and a in b.culprit and b.kind in ("gpu", "link")
        if n > 3:
            assert (b.kind, b.culprit) == ("gpu", [a])
    else:
        other = data.draw(st.sampled_from([m for m in members if m != a]))
        fails, runs = model(lambda w: {a, other} <= w)
        b = run.bisect(members, fails, cap=16)
        assert sorted(b.culprit, key=members.index) == sorted([a, other], key=members.index) and b.kind == "link"
    assert len(runs) <= 16
