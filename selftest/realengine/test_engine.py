"""The real engine itself: `transformers serve` with SmolLM2-135M-Instruct on the CPU and its three
model variants behaving as the checks downstream rely on (observed values in docs/real-engine.md).
A server owned by PID (started, pinned to its name, stopped with nothing left in its group) is
asserted on the second healthy engine test_golden_engine.py starts and stops: an engine start of its
own here before (wave 12)."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(600)]


def test_healthy_model_knows_paris(healthy):
    r = healthy.completion("The capital of France is", max_tokens=16)
    assert r.status == 200, r.body
    text = r.body["choices"][0]["text"]
    assert "paris" in text.lower(), text
    assert "logprobs" not in r.body["choices"][0] or r.body["choices"][0]["logprobs"] is None, \
        "transformers serve started returning logprobs: SRV-SANITY's logprob branch can now be proven here"


def test_healthy_model_answers_in_content(healthy):
    r = healthy.chat("What is 17 + 25? Answer with the number only.", max_tokens=16)
    assert r.status == 200, r.body
    choice = r.body["choices"][0]
    assert choice["message"]["content"].strip() and choice["finish_reason"] == "stop", choice
    assert not choice["message"].get("reasoning_content"), choice


def test_nan_norm_model_generates_nothing(serve):
    """Final-norm weights NaN: every logit is NaN, greedy argmax picks token 0 (<|endoftext|>, a
    special token) every step, and the served text is empty although 16 tokens were generated."""
    with serve("nan-norm") as srv:
        r = srv.completion("The capital of France is", max_tokens=16)
    assert r.status == 200, r.body  # HTTP 200: the failure is silent
    choice = r.body["choices"][0]
    assert choice["text"] == "" and choice["finish_reason"] == "length", choice
    assert r.body["usage"]["completion_tokens"] == 16, r.body["usage"]


def test_reasoning_template_hides_the_answer_under_a_small_budget(serve):
    """The chat template opens <think>; transformers serve routes the text before </think> to
    reasoning_content, so under a small max_tokens content is empty and finish_reason length."""
    with serve("reasoning-template") as srv:
        r = srv.chat("What is 17 + 25? Answer with the number only.", max_tokens=16)
    assert r.status == 200, r.body
    choice = r.body["choices"][0]
    msg = choice["message"]
    assert msg["content"] == "" and choice["finish_reason"] == "length", choice
    assert msg.get("reasoning_content"), choice
