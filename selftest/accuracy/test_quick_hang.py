"""The quick gate under the hang rule (issue 34): GSM8K questions routed to the ranks in turn,
one rank accepting them and never answering, over real HTTP on loopback. The gate ends with
QuickHang (what came back, what hung, the ranks) once the others came back and the bound passed
-- not at the request deadline, and never as could-not-observe --; the per-rank mechanism reads
it as every check's (PerRank.read: 'k of n requests still in flight ... dp2'). A rank that is
slower but answers within the bound is not hung. Small bounds; assertions on what was read."""
from __future__ import annotations

import pytest

from rackgate.atom.client import Client
from rackgate.atom.fanout import HangRule
from rackgate.atom.perrank import PerRank, Routing
from rackgate.gates.sequential import Sprt
from rackgate.gsm8k import quick
from rackgate.gsm8k.data import read_split
from rackgate.gsm8k.task import Gsm8kTask
from rackgate.sim.gsm8k import data_dir

from .stub import Stub

pytestmark = [pytest.mark.suite, pytest.mark.timeout(300)]  # real loopback HTTP servers

TABLE = {0: "node1", 1: "node1", 2: "node2"}
WAIT = 600  # the request deadline: never reached here
RULE = HangRule(floor_s=1.0, factor=5.0)


@pytest.fixture(scope="module")
def task():
    return Gsm8kTask(str(data_dir()), num_fewshot=1, api="completions",
                     gen_kwargs={"max_tokens": 32, "temperature": 0, "top_p": 1})


def _gold() -> dict[str, str]:
    return {row["question"].strip(): row["answer"].split("####")[-1].strip()
            for row in read_split(str(data_dir()), "test")[:40]}


GOLD = _gold()


def _right(question: str):
    return (f"Adding it up.\n#### {GOLD.get(question, '0')}", "stop")


def _sprt(max_n: int = 30) -> Sprt:
    return Sprt(p_pass=0.9, p_fail=0.5, false_pass=0.05, false_fail=0.05, max_n=max_n)


def _run(task, stub, rule=RULE, max_n=30):
    return quick.run(task, lambda: Client(stub.url, stub.model, WAIT), _sprt(max_n), list(range(max_n)), 4,
                     wait_s=WAIT, table=TABLE, hang=rule)


def test_a_rank_that_never_answers_ends_the_gate_as_a_hang_naming_it(task):
    with Stub(_right, hold=lambda b: b.get("data_parallel_rank") == 2) as stub:
        with pytest.raises(quick.QuickHang) as e:
            _run(task, stub)
    fanned = e.value.fanned
    assert fanned.hung and {a.rank for a in fanned.hung} == {2}
    assert fanned.replied and all(g.ask.rank in (0, 1) for g in fanned.replied)
    assert fanned.bound_s == RULE.bound(fanned.slowest_s)
    spread = PerRank(Client(stub.url, stub.model, WAIT), Routing(TABLE, True), RULE, WAIT).read(fanned)
    line = spread.hang()
    assert line and f"{len(fanned.hung)} of {fanned.asked} requests still in flight" in line, line
    assert "node2/dp2" in line and spread.hung_ranks() == [2], line
    assert spread.nothing_back() is None


def test_a_rank_slower_than_the_others_within_the_bound_is_not_hung(task):
    slow = lambda b: 0.3 if b.get("data_parallel_rank") == 2 else 0.0
    with Stub(_right, delay=slow) as stub:
        result = _run(task, stub, HangRule(floor_s=30.0, factor=10.0), max_n=12)
    assert result.decision.verdict == "pass" and result.items
    assert {result.rank_of[it.doc] for it in result.items} >= {2}


def test_without_the_rule_the_gate_waits_on_the_hung_question(task):
    """The same server with hang=None: the gate is still waiting when the sequential test would
    long have settled (the request deadline is its only bound) -- what the rule changes."""
    import threading
    with Stub(_right, hold=lambda b: b.get("data_parallel_rank") == 2) as stub:
        out: list = []

        def gate():
            try:
                out.append(_run(task, stub, rule=None))
            except Exception as e:  # noqa: BLE001 - the stub closing under it ends the wait
                out.append(e)
        t = threading.Thread(target=gate, daemon=True)
        t.start()
        t.join(8.0)
        assert t.is_alive() and not out
