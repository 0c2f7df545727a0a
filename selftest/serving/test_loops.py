"""Degenerate text by its structure (rackgate/probes/degenerate.py `_loop`): a repetition loop -- one
word or fragment repeated back to back, a cycle of n-grams, `BlockBlockBlock...` (one "word" to a word
count: tenstorrent/tt-xla #5892) -- is degenerate in SRV-SANITY's share, whole and as a stream is cut;
a fluent answer that repeats a phrase once is not. Properties over real answers' sentences (the
sim's and SmolLM2's healthy continuations, the runbook's prose) and real loops' fragments. The sim
run: the matrix case rank-loop (catalogue/matrix/srv.toml)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackgate.gates import sanity
from rackgate.probes import degenerate as text

pytestmark = pytest.mark.unit

# Sentences of healthy answers: fluent, none repeated back to back.
FLUENT = (
    " Paris. It is the largest city in France and home to the Eiffel Tower.",
    " 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,",
    " cold. The opposite of up is down.",
    " The question is answered step by step below, with the result stated at the end.",
    " Natalia sold 48/2 = 24 clips in May.",
    " Natalia sold 48+24 = 72 clips altogether in April and May.\n#### 72",
    " The server boots once, then every rank is asked the same prompts.",
    " Weng earns 12/60 = $0.2 per minute. Working 50 minutes, she earned 0.2 x 50 = $10.",
    " def add(a, b):\n    return a + b\n",
    " Once upon a time, a small robot lived in a quiet village by the sea.",
    " | rank | node |\n| --- | --- |\n| dp0 | node1 |",
    " The KV budget is negative on 288 GiB boards at 16384 batched tokens.",
)
# Fragments real loops repeat.
FRAGMENTS = ("Block", " Block", "the ", " the cat sat on the mat.", "I'm sorry, ", "\n- item", "0, ", " and then",
             "<|im_end|>", "ababab", " Paris. Paris is", "!?")


def test_real_signatures():
    assert text.degenerate("Block" * 48).startswith("a repetition loop: 'Block' repeated 48 times")
    assert text.degenerate(" the cat sat on the mat." * 8).startswith("a repetition loop")
    assert text.degenerate(" Paris. It is the largest city." + " and then" * 12)
    assert text.degenerate_so_far("BlockBlockBlockBlockBlockBlockBlockBlockBlockBlockBlockBlockBlock")
    assert text.degenerate(" Paris. It is the largest city in France.") is None
    assert text.degenerate(" I am sure. I am sure.") is None, "a phrase repeated once is language"
    assert text.degenerate(" | rank | node | state |\n| --- | --- | --- |\n| dp0 | node1 | ok |") is None, \
        "a table's rule line is a small share of the table"
    assert text.degenerate("!?" * 12), "a loop of punctuation is one too"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(FLUENT), min_size=1, max_size=8, unique=True), st.data())
def test_a_fluent_answer_that_repeats_a_phrase_once_is_not_degenerate(sentences, data):
    i = data.draw(st.integers(0, len(sentences) - 1))
    twice = sentences[:i + 1] + [sentences[i]] + sentences[i + 1:]  # one sentence said twice, back to back
    t = "".join(twice)
    assert text.degenerate(t) is None, t
    for cut in range(0, len(t) + 1, 7):
        assert text.degenerate_so_far(t[:cut]) is None, t[:cut]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FRAGMENTS), st.integers(3, 60), st.lists(st.sampled_from(FLUENT), max_size=2, unique=True))
def test_a_loop_over_most_of_the_answer_is_degenerate(fragment, copies, before):
    """A fluent start, then one fragment back to back: degenerate once the loop is most of the answer
    (at least LOOP_COPIES copies over LOOP_MIN characters), and then a stream of it is cut too."""
    head, loop = "".join(before), fragment * copies
    t = head + loop
    # a copy may be cut by the text's own stripping or where the loop lines up: one copy spare
    looped = copies > text.LOOP_COPIES and len(loop) >= text.LOOP_MIN + len(fragment) \
        and len(loop) >= text.LOOP_SHARE * len(t.strip()) + len(fragment)
    if looped:
        assert text.degenerate(t), t
        longer = head + fragment * (copies + 200)
        assert text.degenerate_so_far(longer), longer[:200]
    if len(loop) < text.LOOP_SHARE * len(t.strip()) - len(fragment):
        assert not (text.degenerate(t) or "").startswith("a repetition loop"), t


def test_loops_count_in_sanitys_share_like_bang_and_empty():
    answers = [sanity.Answer("p", t, sanity.degenerate(t), r, f"node{r // 2 + 1}")
               for r, t in enumerate([" Paris. It is the largest city in France.", "Block" * 16, "!!!!!!!!", ""])]
    said = sanity.share(answers, 4)
    assert said.startswith("3 of 4 answers degenerate, the other 1 coherent")
    assert sanity.blamed(answers) == "node1/dp1, node2"
