"""The sim model's GSM8K: K3's answer format, the configured accuracy, deterministic, its own data
when the shared copy is absent, and the faults that change its answers."""
from __future__ import annotations

import json
import re

import pytest

from rackgate.sim import gsm8k as sg

pytestmark = pytest.mark.unit

STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")


def _rows(d, split="test"):
    return [json.loads(l) for l in (d / f"{split}.jsonl").read_text().splitlines() if l.strip()]


def _strict_score(rows, accuracy, faults=frozenset()):
    ok = 0
    for r in rows:
        m = STRICT.findall(sg.answer(r["question"], r["answer"], accuracy, faults))
        gold = r["answer"].split("####")[-1].strip().replace(",", "")
        ok += bool(m) and m[0].replace(",", "").rstrip(".") == gold
    return ok / len(rows)


def test_accuracy_is_the_configured_one():
    rows = _rows(sg.data_dir())
    assert abs(_strict_score(rows, 0.96) - 0.96) < 0.02
    assert _strict_score(rows, 0.0) == 0.0
    assert abs(_strict_score(rows, 0.80) - 0.80) < 0.04


def test_deterministic_and_in_k3s_format():
    r = _rows(sg.data_dir())[0]
    a = sg.answer(r["question"], r["answer"], 0.96)
    assert a == sg.answer(r["question"], r["answer"], 0.96)
    assert "<<" not in a and "\n#### " in a


def test_answerer_reads_chat_turns_and_few_shot_prompts():
    rows = _rows(sg.data_dir())
    q = rows[0]["question"]
    chat = sg.answerer(f"Question: {q}\nAnswer:")
    shots = "".join(f"Question: {r['question']}\nAnswer: {r['answer']}\n\n" for r in rows[1:3])
    completion = sg.answerer(shots + f"Question: {q}\nAnswer:")
    assert chat and "#### " in chat and not chat.endswith("Question:")
    assert completion.startswith(" ") and completion.endswith("\n\nQuestion:")  # the stop string cuts it
    assert sg.answerer("The capital of France is") is None
    assert sg.answerer("Question: not a GSM8K question at all\nAnswer:") is None


def test_generated_set_when_the_shared_copy_is_absent(tmp_path):
    d = sg.generate(tmp_path / "gen")
    test, train = _rows(d), _rows(d, "train")
    assert len(test) == 300 and len(train) == 100
    assert all(re.search(r"\n#### \d+$", r["answer"]) for r in test + train)
    assert sg.generate(tmp_path / "gen") == d  # made once
    assert abs(_strict_score(test, 0.96) - 0.96) < 0.03


def test_faults_change_the_answers():
    rows = _rows(sg.data_dir())[:300]
    assert _strict_score(rows, 0.96, frozenset({"answer-format"})) < 0.4
    assert _strict_score(rows, 0.96, frozenset({"fake-eplb"})) == 0.0
