"""The ACC rows' judges (rackgate/gates/accuracy.py) over plain reads (rackgate/probes/acc.py
`Quick`, `UnderLoad`, `Full`): healthy passes, each fault fails at its row and place, nothing read
refuses to judge; and lm-eval's watch (rackgate/gsm8k/session.py) records what it saw, for the
judge to word."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.config.accuracy import AccuracyExpect
from rackgate.errors import CouldNotObserve, NotRun
from rackgate.gates import accuracy
from rackgate.gates.declare import Finding
from rackgate.gates.sequential import Decision, Sprt
from rackgate.gsm8k import quick, session
from rackgate.gsm8k.scoring import FilterVerdict, ItemVerdict, Outcome
from rackgate.gsm8k.task import FLEXIBLE, STRICT
from rackgate.probes import acc
from rackgate.probes.gsm8k_results import Results, Score
from rackgate.probes.served import Hang

pytestmark = pytest.mark.unit

URL = "http://head:8000"
RACK = SimpleNamespace(accuracy=AccuracyExpect(expected=0.95, tolerance=0.02, under_load_z=2.58))
SPRT = Sprt(p_pass=0.95, p_fail=0.9, false_pass=0.01, false_fail=0.05, max_n=400)
HANG = Hang("1 of 16 requests still in flight after 2.0s while 15 came back", "node3/dp9",
            (("ACC: requests in flight and answered", "dp9: in flight"),), (9,))


def item(doc, response, outcome, tokens=30):
    v = FilterVerdict("42" if outcome is Outcome.CORRECT else "[invalid]", float(outcome is Outcome.CORRECT), outcome)
    return ItemVerdict(doc, response, "stop", "#### 42", {STRICT: v, FLEXIBLE: v}, tokens)


def result(verdict, items, rank_of=None, nodes=None):
    k = sum(it.strict.outcome is Outcome.CORRECT for it in items)
    return quick.QuickResult(Decision(verdict, len(items), k, 5.0 if verdict == "pass" else -5.0, "settled"), SPRT,
                             items, population=1319, rank_of=rank_of or {}, nodes=nodes or {})


RIGHT = [item(i, "She had 42.\n#### 42", Outcome.CORRECT) for i in range(40)]


def test_a_settled_pass_passes_and_records_the_accuracy_and_output_length_rack_wide():
    q = acc.Quick(URL, pre="every rank: 4 tokens", result=result("pass", RIGHT))
    assert accuracy.quick_passes(q, RACK, URL) == []
    facts = {f.name: f for f in accuracy.quick_facts(q, "server")}
    assert facts["accuracy.gsm8k.quick"].value == 1.0 and facts["accuracy.gsm8k.quick"].where == "rack"
    assert facts["accuracy.output_tokens.mean"].value == 30 and facts["accuracy.output_tokens.mean"].unit == "tokens"
    assert "per question: doc, strict-match outcome, extracted, finish_reason" in [s.name for s in
                                                                                  accuracy.quick_shown(q, RACK)]


def test_coherent_wrong_answers_fail_the_quick_gate_at_the_server():
    wrong = [item(i, "She had 41.\n#### 41", Outcome.WRONG) for i in range(6)]
    [f] = accuracy.quick_passes(acc.Quick(URL, result=result("fail", wrong)), RACK, URL)
    assert not isinstance(f, Finding) and f.startswith("FAIL after 6 of 1319") and "below the threshold" in f


def test_a_rank_whose_every_answer_is_degenerate_is_sanitys_finding_there():
    items = [item(0, "!!!!!!!!!!!!", Outcome.UNPARSED), item(1, "#### 42", Outcome.CORRECT),
             item(2, "!!!!!!!!!!!!", Outcome.UNPARSED), item(3, "#### 42", Outcome.CORRECT)]
    r = result("fail", items, {0: 9, 1: 0, 2: 9, 3: 0}, {0: "node1", 9: "node3"})
    [f] = accuracy.quick_passes(acc.Quick(URL, result=r), RACK, URL)
    assert (f.row, f.where) == ("SRV-SANITY", "node3/dp9") and f.startswith("ACC-QUICK: 2 of 4 answers degenerate")
    # nothing of the model's to compare under load: not run, pointing at ACC-QUICK
    with pytest.raises(NotRun, match="ACC-QUICK found degenerate answers"):
        accuracy.under_load_agrees(acc.UnderLoad(acc.Quick(URL, result=r)), RACK, URL)


def test_a_quick_gate_that_read_nothing_refuses_to_judge():
    with pytest.raises(CouldNotObserve, match="did not settle"):
        accuracy.quick_passes(acc.Quick(URL, blind="the quick gate did not settle"), RACK, URL)


def loaded(correct, asked=32, answered=50, **kw):
    return acc.UnderLoad(acc.Quick(URL, result=result("fail", RIGHT[:30] + [item(99, "She had 41.\n#### 41", Outcome.WRONG)] * 10)),
                         True, "every rank", correct=correct, asked=asked, per_question="1\tcorrect",
                         fillers="64 filler streams, 900 filler requests, 890 answered", fillers_answered=answered, **kw)


def test_the_accuracy_under_load_agrees_whatever_the_quick_gates_verdict():
    assert accuracy.under_load_agrees(loaded(24), RACK, URL) == []   # 0.75 against the quick gate's 0.75


def test_accuracy_falling_under_load_fails_at_the_server():
    [f] = accuracy.under_load_agrees(loaded(3), RACK, URL)
    assert f.startswith("accuracy falls under load: accuracy under load 0.094 (32 questions)")
    assert "64 filler streams" in f


def test_no_load_or_no_questions_under_load_refuses_to_judge():
    with pytest.raises(CouldNotObserve, match="no filler request was answered"):
        accuracy.under_load_agrees(loaded(24, answered=0), RACK, URL)
    with pytest.raises(CouldNotObserve, match="no gsm8k here"):
        accuracy.under_load_agrees(loaded(0, asked=0, blind="no gsm8k here"), RACK, URL)


def test_hangs_under_load_before_and_among_the_questions():
    [f] = accuracy.under_load_agrees(loaded(0, asked=0, pre_hang=HANG), RACK, URL)
    assert (f.row, f.where) == ("SRV-DEADLOCK", "node3/dp9") and f.startswith("ACC-UNDER-LOAD's requests: ")
    [f] = accuracy.under_load_agrees(loaded(0, asked=0, hang=HANG, scored=5), RACK, URL)
    assert (f.row, f.where, f.also) == ("ACC-UNDER-LOAD", "node3/dp9", ("SRV-DEADLOCK",))
    assert f.startswith("5 GSM8K questions scored under load before the hang; 64 filler streams")


def results(strict, degenerate=0, invalid=0):
    return Results("gsm8k_local", "3", {"strict-match": Score(strict, 0.01)}, 100, 1319, "0.4.13", "/r.json",
                   invalid=invalid, degenerate=degenerate, wrong=100 - degenerate, samples=100)


def test_lm_eval_within_tolerance_passes_and_records_the_full_accuracy():
    f = acc.Full(URL, "lm_eval ...", results=results(0.96))
    assert accuracy.full_passes(f, RACK, URL) == []
    [fact] = accuracy.full_facts(f, "server")
    assert (fact.name, fact.value, fact.where) == ("accuracy.gsm8k.full", 0.96, "rack")


def test_lm_eval_below_the_floor_fails_and_degenerate_answers_are_sanitys():
    [f] = accuracy.full_passes(acc.Full(URL, results=results(0.5)), RACK, URL)
    assert "strict-match 0.5000 < 0.9300" in f
    [f] = accuracy.full_passes(acc.Full(URL, results=results(0.0, degenerate=100)), RACK, URL)
    assert (f.row, f.where) == ("SRV-SANITY", URL) and "every answer: the whole server" in f


def test_lm_eval_hangs_and_its_own_timeout_while_every_rank_answers():
    [f] = accuracy.full_passes(acc.Full(URL, pre_hang=HANG), RACK, URL)
    assert (f.row, f.where) == ("SRV-DEADLOCK", "node3/dp9") and f.startswith("ACC-GSM8K's requests: ")
    stalled = "lm_eval: 12 of 100 questions answered, then none for 40s"
    [f] = accuracy.full_passes(acc.Full(URL, stalled=stalled, look_hang=HANG), RACK, URL)
    assert (f.row, f.where, f.also) == ("ACC-GSM8K", "node3/dp9", ("SRV-DEADLOCK",)) and f.startswith(stalled)
    [f] = accuracy.full_passes(acc.Full(URL, stalled=stalled, late="Exception:TimeoutError()", unanswered="88 of 100",
                                        slowest_s=0.4, routing="16 DP ranks"), RACK, URL)
    assert not isinstance(f, Finding) and "while every rank answered a short request within 0.4s" in f
    assert "88 of 100 questions not answered" in f


def test_lm_eval_that_read_nothing_refuses_to_judge():
    with pytest.raises(CouldNotObserve, match="lm_eval exited 1"):
        accuracy.full_passes(acc.Full(URL, blind="lm_eval exited 1 after 3s"), RACK, URL)


class Look:
    """A per_rank for lm-eval's watch: every rank asked once answers (or, `hung`, one rank does not)."""

    def __init__(self, hung=False):
        self.hung, self.asked = hung, 0
        self.hang = SimpleNamespace(floor_s=30.0, factor=10.0)

    def ask(self, prompts, max_tokens, stream=False):
        self.asked += 1
        return SimpleNamespace(hang=lambda: "1 of 16 in flight" if self.hung else None, nothing_back=lambda: "",
                               slowest_s=0.4, routing=SimpleNamespace(describe=lambda: "16 DP ranks"),
                               evidence=lambda: "every rank")


def watched(per_rank, times, lines):
    """lm-eval's watch fed progress (done, total) at `times`, the log text `lines`; what it ended with."""
    said: list[str] = []
    clock = iter(times)
    watch = session._watch(per_rank, session.FullRead("lm_eval ..."), said.append, clock=lambda: next(clock))
    try:
        for progress, text in lines:
            watch(progress, text, 0.0)
    except session._Ended as e:
        return e.read, said
    return None, said


def test_the_watch_ends_lm_eval_on_a_stall_a_rank_does_not_answer_and_records_it():
    read, _ = watched(Look(hung=True), [0.0, 2.0, 40.0], [((0, 100), ""), ((12, 100), ""), ((12, 100), "")])
    assert read is not None and read.look.hang() and read.stalled.startswith("lm_eval: 12 of 100 questions answered")


def test_a_stall_every_rank_answers_is_waited_for_and_said():
    read, said = watched(Look(), [0.0, 2.0, 40.0], [((0, 100), ""), ((12, 100), ""), ((12, 100), "")])
    assert read is None and said and "a long answer, waited for" in said[0]


def test_lm_evals_own_timeout_while_every_rank_answers_ends_it_and_is_recorded():
    line = "ERROR [models.api_models:557] Exception:TimeoutError(), (no outputs), retrying."
    read, _ = watched(Look(), [0.0, 2.0], [((0, 100), ""), ((12, 100), line)])
    assert read is not None and read.late.endswith("retrying.") and read.unanswered == "88 of 100"
    assert not read.look.hang()
