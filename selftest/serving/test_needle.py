"""SRV-LONGCTX's needle in a haystack (rackgate/probes/needle.py): the prompt carries its value once,
at its depth, and ends with the question; an answer is right only with the value exactly (the
answers SmolLM2-135M gave to these prompts on CPU at 40-1000 words, and mutations of them). The sim
run: the matrix case longctx-corrupt (catalogue/matrix/srv.toml); the sim's model answers the
needle (rackgate/sim/model.py `_needle`)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackgate.probes import needle
from rackgate.sim import model

pytestmark = pytest.mark.unit

# What transformers serve's SmolLM2-135M-Instruct answered (greedy, 8 tokens) to such prompts.
REAL = (" 48213.\n", " 48213. seven")


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2000), st.integers(0, 10 ** 6))
def test_the_prompt_carries_its_value_once_at_its_depth(words, seed):
    n = needle.needle(words, seed)
    assert n.prompt.endswith(needle.QUESTION) and len(n.value) == 5 and n.prompt.count(n.value) == 1
    assert n.depth in (0.2, 0.4, 0.6, 0.8)
    hay = n.prompt[:-len(needle.QUESTION)]
    if words >= 10:
        at = hay.index(n.value) / len(hay)
        assert abs(at - n.depth) < 0.15, (at, n.depth)
    assert model.continuation(n.prompt) == f" {n.value}.", "the sim's model reads the needle back"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(REAL), st.integers(0, 10 ** 6), st.data())
def test_an_answer_is_right_only_with_the_value_exactly(real, seed, data):
    n = needle.needle(300, seed)
    right = real.replace("48213", n.value)
    assert needle.missed(right, n) is None
    assert needle.missed(f" {n.value[:2]},{n.value[2:]}.", n) is None, "a thousands separator is the same number"
    i = data.draw(st.integers(0, 4))
    d = data.draw(st.sampled_from([c for c in "0123456789" if c != n.value[i]]))
    wrong = right.replace(n.value, n.value[:i] + d + n.value[i + 1:])
    assert needle.missed(wrong, n).startswith(f"answered {n.value[:i] + d + n.value[i + 1:]} ")
    assert needle.missed(right.replace(n.value, n.value + "7"), n), "a longer number is another number"
    assert needle.missed(" not in the text.", n).startswith("answered 'not in the text.' for the needle")
    assert needle.missed("", n)
