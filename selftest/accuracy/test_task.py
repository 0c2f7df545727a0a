"""lm-eval's gsm8k task as the quick gate builds it: read from the installed lm-eval, contexts
for any document equal to the ones lm_eval builds in order, lm-eval's stop strings and filters."""
from __future__ import annotations

import json

import pytest

from rackgate.gsm8k import lmeval
from rackgate.gsm8k.data import DataError, read_dir
from rackgate.gsm8k.task import FLEXIBLE, STRICT, Gsm8kTask, load_config, response_text
from rackgate.sim.gsm8k import data_dir

pytestmark = pytest.mark.unit

GEN = {"max_tokens": 12288, "temperature": 0, "top_p": 1}


@pytest.fixture(scope="module")
def chat():
    return Gsm8kTask(str(data_dir()), api="chat", gen_kwargs=GEN)


def test_definition_comes_from_the_installed_yaml(chat):
    y = load_config()
    assert chat.generation_kwargs["until"] == y["generation_kwargs"]["until"]
    assert [f.name for f in chat.filters()] == [f["name"] for f in y["filter_list"]] == [STRICT, FLEXIBLE]
    assert chat.fallbacks() == {STRICT: "[invalid]", FLEXIBLE: "[invalid]"}
    assert chat.version == str(y["metadata"]["version"])


def test_any_document_gets_the_context_lm_eval_builds_in_order(chat):
    """lm_eval builds contexts in document order from one seeded sampler; the gate builds the
    context of any document alone. Replay lm_eval's order on a fresh task and compare."""
    ref = Gsm8kTask(str(data_dir()), api="chat", gen_kwargs=GEN)
    t = ref.task
    t.set_fewshot_seed(seed=1234)
    in_order = [t.fewshot_context(doc=d, num_fewshot=5, apply_chat_template=True, fewshot_as_multiturn=True,
                                  chat_template=lambda m, add_generation_prompt=True: m)
                for d in ref.docs[:40]]
    for i in (39, 0, 17, 3, 39):  # any order, repeated
        assert chat.context(i) == in_order[i]
    assert len(in_order[0]) == 11 and in_order[0][-1]["content"].startswith("Question: ")


def test_completions_prompt_is_lm_eval_text_form():
    t = Gsm8kTask(str(data_dir()), api="completions", gen_kwargs=GEN)
    req = t.request(0)
    assert req.path == "/v1/completions"
    p = req.body["prompt"]
    assert p.count("Question: ") == 6 and p.endswith("\nAnswer:") and "\n\nQuestion: " in p
    assert req.body["stop"] == t.generation_kwargs["until"] and req.body["max_tokens"] == 12288


def test_templates_compiled_once_render_what_lm_evals_own_function_renders(monkeypatch):
    """The task compiles each Jinja source once (task._templates_compiled_once): every prompt and
    target is the text lm-eval's own apply_template (a compile per call) renders."""
    from lm_eval import utils

    t = Gsm8kTask(str(data_dir()), api="completions", gen_kwargs=GEN)
    assert getattr(utils.apply_template, "rackgate_compiled_once", False)
    ids = (0, 7, 41, 7)
    once = [(t.request(i).body["prompt"], t.target(i)) for i in ids]
    monkeypatch.setattr(utils, "apply_template", lambda template, doc: utils.env.from_string(template).render(**doc))
    assert once == [(t.request(i).body["prompt"], t.target(i)) for i in ids]
    assert once[0][0].count("Question: ") == 6


def test_response_text_reads_what_lm_eval_reads():
    assert response_text("chat", {"choices": [{"message": {"content": None, "reasoning_content": "x"},
                                               "finish_reason": "length"}]}) == ("", "length")
    assert response_text("completions", {"choices": [{"text": " 4\n#### 4", "finish_reason": "stop"}]})[0] == " 4\n#### 4"
    with pytest.raises(ValueError):
        response_text("chat", {"error": "x"})


def test_bad_data_is_one_line(tmp_path):
    with pytest.raises(DataError, match="cannot read"):
        read_dir(tmp_path)
    (tmp_path / "test.jsonl").write_text('{"question": "q"}\n')
    (tmp_path / "train.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n')
    with pytest.raises(DataError, match=r"test.jsonl:1: a row needs"):
        read_dir(tmp_path)
    with pytest.raises(DataError, match="does not exist"):
        lmeval.local_task_yaml(str(tmp_path / "nowhere"))


def test_local_task_yaml_includes_lm_evals_own(tmp_path):
    d = data_dir()
    text = lmeval.local_task_yaml(str(d))
    assert "gsm8k/gsm8k.yaml" in text and "dataset_path: json" in text and str(d) in text


def test_results_parser_says_what_is_missing():
    with pytest.raises(lmeval.ResultsError, match="not JSON"):
        lmeval.parse_results("{", "gsm8k")
    with pytest.raises(lmeval.ResultsError, match="no results for task 'gsm8k'"):
        lmeval.parse_results(json.dumps({"results": {"x": {}}}), "gsm8k")
    r = lmeval.parse_results(json.dumps({"results": {"gsm8k": {
        "alias": "gsm8k", "exact_match,strict-match": 0.9621, "exact_match_stderr,strict-match": 0.0053,
        "exact_match,flexible-extract": 0.9613, "exact_match_stderr,flexible-extract": 0.0053}},
        "versions": {"gsm8k": 3.0}, "n-samples": {"gsm8k": {"original": 1319, "effective": 1319}},
        "lm_eval_version": "0.4.13"}), "gsm8k")
    assert r.strict.value == 0.9621 and r.scores[FLEXIBLE].stderr == 0.0053 and r.n_original == 1319
