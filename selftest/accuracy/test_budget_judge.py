"""ACC-BUDGET's declared judge (rackgate/gates/budget.py `budget_answers`) on every rank's answers
(rackgate.atom.perrank.Spread, as probes/acc.py `budget` reads them): one rank of sixteen whose
answer is all reasoning is a FAILED naming that rank and the share; degenerate answers are
SRV-SANITY's and a hang SRV-DEADLOCK's (a `Finding` of that row, naming ACC-BUDGET); requests refused
while others were answered are the row's share, every one refused could not observe; with the ranks
unknown the share says so and blames no rank."""
from __future__ import annotations

import pytest

from rackgate.atom.fanout import Ask, Got, HangRule
from rackgate.atom.perrank import Routing, Spread
from rackgate.errors import CouldNotObserve
from rackgate.gates import budget
from rackgate.gates.declare import Finding
from rackgate.probes.acc import Budget

pytestmark = pytest.mark.unit

RACK = None  # the judge reads nothing of the rack file
TABLE = {r: f"node{r // 4 + 1}" for r in range(16)}
URL = "http://head:8000"


def _answer(rank: int | None, text: str = "42", finish: str = "stop", **kw) -> Got:
    return Got(Ask("What is 17 + 25?", rank, True), text, finish, replied=True, tokens=3, **kw)


def _spread(got: list[Got], hung: list[Ask] = (), table=TABLE, hinted=True) -> Budget:
    s = Spread(got, len(got) + len(hung), len(hung), 1.0, list(hung), 30.0 if hung else None, 0.5,
               routing=Routing(dict(table), hinted), hang_rule=HangRule(30.0, 10.0))
    return Budget(s, 512)


def test_every_rank_answering_in_content_passes():
    assert budget.budget_answers(_spread([_answer(r) for r in range(16)]), RACK, URL) == []


def test_one_reasoning_only_rank_fails_naming_that_rank_and_the_share():
    got = [_answer(r) for r in range(16)]
    got[9] = _answer(9, "", "length", reasoning="Let me think" * 50)
    (f,) = budget.budget_answers(_spread(got), RACK, URL)
    assert isinstance(f, Finding) and f.row == "" and f.where == "node3/dp9", (f, f.where)
    assert f.startswith("max_tokens=512: 1 of 16 answers without an answer in content"), f
    assert "finish_reason='length'" in f and "the other 15 fine" in f, f


def test_ranks_unknown_the_share_blames_no_rank():
    got = [_answer(None) for _ in range(16)]
    got[3] = _answer(None, "", "stop", reasoning="The answer is 42.")
    (f,) = budget.budget_answers(_spread(got, table={}, hinted=False), RACK, URL)
    assert f.where == "" and "which rank served which is not known" in f and "reasoning-parser" in f, f


def test_degenerate_answers_are_sanity_s_finding_naming_the_budget():
    got = [_answer(r) for r in range(16)]
    got[4] = _answer(4, "!!!!!!!!", "length", stopped="every character is '!' (8 of them)")
    (f,) = budget.budget_answers(_spread(got), RACK, URL)
    assert f.row == "SRV-SANITY" and f.where == "node2/dp4", (f.row, f.where)
    assert f.startswith("ACC-BUDGET: 1 of 16 answers degenerate") and "cannot be judged" in f, f


def test_a_hang_is_deadlock_s_finding_naming_the_ranks_and_the_budget():
    got = [_answer(r) for r in range(16) if r != 12]
    b = _spread(got, hung=[Ask("What is 17 + 25?", 12, True)])
    b = Budget(b.spread, 512, (("py-spy dump dp12", "Thread 1"),), "py-spy of dp12")
    (f,) = budget.budget_answers(b, RACK, URL)
    assert f.row == "SRV-DEADLOCK" and f.where == "node4/dp12", (f.row, f.where)
    assert f.startswith("ACC-BUDGET's requests: 1 of 16 requests still in flight") and "py-spy of dp12" in f, f
    assert [s.name for s in budget.budget_shown(b, RACK)][1:] == ["py-spy dump dp12"]


def test_refused_requests_are_the_share_and_all_refused_could_not_observe():
    got = [_answer(r) for r in range(16)]
    got[2] = _answer(2, "", None, error="HTTP 500: engine error", status=500)
    (f,) = budget.budget_answers(_spread(got), RACK, URL)
    assert f.row == "" and f.where == "node1/dp2" and "1 of 16 requests answered with an error" in f, f
    every = [_answer(r, "", None, error="HTTP 400: no chat template", status=400) for r in range(16)]
    with pytest.raises(CouldNotObserve, match="POST /v1/chat/completions: HTTP 400: no chat template"):
        budget.budget_answers(_spread(every), RACK, URL)
