"""Degenerate answers and the broken share, without a server (the servers: test_partly_broken.py)."""
from __future__ import annotations

import pytest

from rackgate.gates import sanity
from rackgate.probes import degenerate as text

pytestmark = pytest.mark.unit


def test_degenerate_so_far():
    assert sanity.degenerate_so_far("!!!") is None  # too short to tell
    assert sanity.degenerate_so_far("") is None  # empty is known only at the end
    assert "'!'" in sanity.degenerate_so_far("!" * text.STREAM_BANG)
    assert sanity.degenerate_so_far(" Paris. It is the capital and largest city of France") is None
    assert "repeated" in sanity.degenerate_so_far(" the" * text.STREAM_TOKENS)


def test_share_of_a_wholly_broken_server_is_global():
    answers = [sanity.Answer("p", "!!!!", "every character is '!'", r, f"node{r // 2 + 1}") for r in range(4)]
    said = sanity.share(answers, 4)
    assert said.startswith("4 of 4 answers degenerate, the other 0 coherent")
    assert "common to the whole server" in said and "specific" not in said
    assert sanity.blamed(answers) == ""  # the whole server: no node to name


def test_share_without_rank_hints_says_the_rank_is_not_known():
    answers = [sanity.Answer("p", "!!!!", "every character is '!'"), sanity.Answer("p", " Paris")]
    said = sanity.share(answers, 3)
    assert said.startswith("1 of 2 answers degenerate, the other 1 coherent (2 of 3 answers back)")
    assert "node- or rank-specific" in said and "not known" in said
    assert sanity.blamed(answers) == ""


def test_degenerate_so_far_reads_the_first_characters_only():
    coherent = " Paris is the capital of France." * 40
    assert len(coherent) > text.STREAM_WINDOW
    assert sanity.degenerate_so_far(coherent + "!" * 5000) is None  # the end is judged whole, at the end


def test_a_full_window_is_judged_once_however_many_chunks_follow(monkeypatch):
    """degenerate_so_far is asked after every chunk of a stream (a GSM8K answer on the sim is
    ~1,350 chunks, a real one up to max_tokens): once the first STREAM_WINDOW characters are in,
    the chunks after them ask about the same window, and its verdict is not worked out again."""
    calls, real = [], text.TOKENISH

    class Counting:
        def findall(self, s):
            calls.append(len(s))
            return real.findall(s)

    monkeypatch.setattr(text, "TOKENISH", Counting())
    so_far = " Kigali, once test_a_full_window, is the capital of Rwanda."
    while len(so_far) <= text.STREAM_WINDOW:
        so_far += " The hills around it are green."
    assert sanity.degenerate_so_far(so_far) is None
    first = len(calls)
    for _ in range(200):   # the chunks after the window
        so_far += " More."
        assert sanity.degenerate_so_far(so_far) is None
    assert len(calls) == first, f"the full window was tokenised {len(calls) - first} more times"
