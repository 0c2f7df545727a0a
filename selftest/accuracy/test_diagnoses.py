"""True diagnoses (issue 12.4): ACC-BUDGET defers degenerate content to SRV-SANITY and tells a
reasoning parser from a budget; ACC-QUICK separates degenerate, truncated and wrong answers."""
from rackgate.gates import budget
from rackgate.gsm8k import quick
from rackgate.gsm8k.scoring import FilterVerdict, ItemVerdict, Outcome
from rackgate.gsm8k.task import STRICT


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
    from rackgate.gsm8k.sequential import Decision, Sprt
    sprt = Sprt(p_pass=0.95, p_fail=0.9, false_pass=0.01, false_fail=0.05, max_n=400)
    coherent = quick.QuickResult(Decision("fail", 2, 0, -3.0, "settled"), sprt, [
        item("She had 3.\n#### 3", "stop", Outcome.WRONG, "3"), item("She had three and then", "length", Outcome.UNPARSED)])
    assert "the model, as served, is below the threshold" in coherent.diagnosis()
    bang = quick.QuickResult(Decision("fail", 2, 0, -3.0, "settled"), sprt, [
        item("!!!!!!!!", "length", Outcome.UNPARSED), item("!!!!!!!!", "length", Outcome.UNPARSED)])
    assert "the server is not producing the model's answers" in bang.diagnosis()
