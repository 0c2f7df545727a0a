"""True diagnoses (issue 12.4): ACC-BUDGET defers degenerate content to SRV-SANITY and tells a
reasoning parser from a budget; ACC-QUICK separates degenerate, truncated and wrong answers."""
import pytest

from rackgate.gates import budget
from rackgate.gsm8k import quick
from rackgate.gsm8k.scoring import FilterVerdict, ItemVerdict, Outcome
from rackgate.gsm8k.task import STRICT

pytestmark = pytest.mark.unit


def chat(content, finish, reasoning=None):
    return {"message": {"content": content, "reasoning_content": reasoning}, "finish_reason": finish}


def test_budget_defers_bang_content_to_sanity():
    j = budget.judge(chat("!" * 400, "length"))
    assert j.kind == "degenerate" and "'!'" in j.why and "budget" not in j.why


def test_budget_names_the_reasoning_parser_when_the_model_stopped():
    j = budget.judge(chat("", "stop", "17 + 25 = 42<|im_end|>"), completion_tokens=15)
    assert j.kind == "reasoning-parser"
    assert "the answer went to reasoning_content: the reasoning parser or chat template" in j.why
    assert "after 15 tokens" in j.why and "ran out" not in j.why


def test_budget_ran_out_inside_the_reasoning():
    j = budget.judge(chat("", "length", "Let me think step by step"))
    assert j.kind == "budget" and "ran out inside the reasoning" in j.why


def test_budget_healthy():
    assert budget.judge(chat("17 + 25 = 42.", "stop")).ok


def item(response, finish, outcome, extracted="[invalid]"):
    return ItemVerdict(1, response, finish, "#### 42",
                       {STRICT: FilterVerdict(extracted, 1.0 if outcome is Outcome.CORRECT else 0.0, outcome)})


def test_quick_separates_degenerate_truncated_and_wrong():
    assert quick.kind(item("!!!!!!!!!!!!", "length", Outcome.UNPARSED)) == "degenerate"
    assert quick.kind(item("Natalia sold 48 clips in April and then she sold half", "length",
                           Outcome.UNPARSED)) == "truncated"
    assert quick.kind(item("She sold 41 clips.\n#### 41", "stop", Outcome.WRONG, "41")) == "wrong"
    assert quick.kind(item("She sold clips.", "stop", Outcome.UNPARSED)) == "unparsed"
    assert quick.kind(item("", "length", Outcome.EMPTY)) == "empty"


def test_quick_fail_says_model_below_threshold_or_server_broken():
    from rackgate.gates.sequential import Decision, Sprt
    sprt = Sprt(p_pass=0.95, p_fail=0.9, false_pass=0.01, false_fail=0.05, max_n=400)
    coherent = quick.QuickResult(Decision("fail", 2, 0, -3.0, "settled"), sprt, [
        item("She had 3.\n#### 3", "stop", Outcome.WRONG, "3"), item("She had three and then", "length", Outcome.UNPARSED)])
    assert "the model, as served, is below the threshold" in coherent.diagnosis()
    bang = quick.QuickResult(Decision("fail", 2, 0, -3.0, "settled"), sprt, [
        item("!!!!!!!!", "length", Outcome.UNPARSED), item("!!!!!!!!", "length", Outcome.UNPARSED)])
    assert "the server is not producing the model's answers" in bang.diagnosis()


def _doc(doc, response, finish, outcome, extracted="[invalid]"):
    return ItemVerdict(doc, response, finish, "#### 42",
                       {STRICT: FilterVerdict(extracted, 1.0 if outcome is Outcome.CORRECT else 0.0, outcome)})


def _result(items, rank_of=None, nodes=None):
    from rackgate.gates.sequential import Decision, Sprt
    sprt = Sprt(p_pass=0.95, p_fail=0.9, false_pass=0.01, false_fail=0.05, max_n=400)
    return quick.QuickResult(Decision("fail", len(items), 0, -3.0, "settled"), sprt, items,
                             rank_of=rank_of or {}, nodes=nodes or {})


def test_quick_names_the_broken_rank_apart_from_wrong_answers():
    """Questions routed to ranks in turn (issue 22.3): the rank whose every answer is '!' is a broken
    rank, the others' wrong answers are counted apart."""
    items = [_doc(0, "!!!!!!!!", None, Outcome.UNPARSED), _doc(1, "#### 42", "stop", Outcome.CORRECT, "42"),
             _doc(2, "She had 3.\n#### 3", "stop", Outcome.WRONG, "3"), _doc(3, "!!!!!!!!", None, Outcome.UNPARSED)]
    r = _result(items, {0: 5, 1: 0, 2: 1, 3: 5}, {0: "node1", 1: "node1", 5: "node2"})
    assert r.broken() == "node2/dp5"
    line = r.degenerate_line()
    assert line.startswith("2 of 4 answers degenerate or empty (2 degenerate, 0 empty with finish_reason stop), "
                           "apart from 1 coherent wrong answers")
    assert "degenerate per rank: node2/dp5 2/2" in line and "broken rank(s) (every answer degenerate): node2/dp5" in line


def test_quick_without_ranks_gives_the_share_and_says_the_rank_is_unknown():
    r = _result([_doc(0, "!!!!!!!!", None, Outcome.UNPARSED), _doc(1, "#### 42", "stop", Outcome.CORRECT, "42")])
    assert r.broken() == "" and "not known" in r.degenerate_line()


def test_quick_empty_for_want_of_budget_is_not_a_broken_server():
    r = _result([_doc(0, "", "length", Outcome.EMPTY), _doc(1, "She had 3.\n#### 3", "stop", Outcome.WRONG, "3")])
    assert r.degenerate_line() == ""
    assert "1 empty" in _result([_doc(0, "", "stop", Outcome.EMPTY)]).degenerate_line()


def test_gsm8k_reports_degenerate_answers_apart_from_wrong_ones(tmp_path):
    import json

    from rackgate.gates import accuracy
    from rackgate.gsm8k import lmeval
    (tmp_path / "results_2026.json").write_text(json.dumps({
        "results": {"gsm8k": {"exact_match,strict-match": 0.25, "exact_match,flexible-extract": 0.25}},
        "n-samples": {"gsm8k": {"effective": 4, "original": 1319}}}))
    rows = [("!!!!!!!!", "[invalid]", 0.0), ("6 x 7 = 42.\n#### 42", "42", 1.0), ("She had 3.\n#### 3", "3", 0.0),
            ("!!!!", "[invalid]", 0.0)]
    (tmp_path / "samples_gsm8k_2026.jsonl").write_text("\n".join(json.dumps({
        "doc_id": i, "filter": STRICT, "target": "42", "resps": [[resp]], "filtered_resps": [ext], "exact_match": em})
        for i, (resp, ext, em) in enumerate(rows)))
    res = lmeval.read_outputs(tmp_path, "gsm8k")
    assert (res.degenerate, res.wrong) == (2, 1)
    said = accuracy.degenerate_share(res)
    assert said.startswith("2 of 4 answers degenerate") and "apart from 1 coherent wrong answers" in said
    assert "which rank is not known" in said
