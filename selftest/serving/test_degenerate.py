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
    assert said.startswith("1 of 2 answers degenerate, the other 1 coherent (2 of 3 answers back, 1 still in flight "
                           "when the verdict was certain)")
    assert "node- or rank-specific" in said and "not known" in said
    assert sanity.blamed(answers) == ""


def test_degenerate_so_far_reads_the_first_characters_only():
    coherent = "".join(f" Paris is the capital of France, said guide {i}." for i in range(40))
    assert len(coherent) > text.STREAM_WINDOW
    assert sanity.degenerate_so_far(coherent + "!" * 5000) is None  # the end is judged whole, at the end


def _degenerate_by_definition(t: str) -> str | None:
    """The signatures as written first (every token counted), for the property below."""
    import re
    from collections import Counter
    stripped = t.strip()
    if not stripped:
        return "empty text"
    if set(stripped) <= {"!"}:
        return f"every character is '!' ({len(stripped)} of them)"
    toks = re.findall(r"\w+|[^\w\s]", stripped)
    if len(toks) >= 4:
        tok, n = Counter(toks).most_common(1)[0]
        if n / len(toks) >= 0.8:
            return f"one token repeated: {tok!r} is {n} of {len(toks)} tokens"
    return text._loop(stripped[:text.LOOP_TEXT])  # the loop rule as it is (its own tests: test_loops.py)


def _so_far_by_definition(t: str) -> str | None:
    import re
    stripped = t[:text.STREAM_WINDOW].strip()
    if len(stripped) >= text.STREAM_BANG and set(stripped) <= {"!"}:
        return _degenerate_by_definition(stripped)
    if len(re.findall(r"\w+|[^\w\s]", stripped)) >= text.STREAM_TOKENS:
        said = _degenerate_by_definition(stripped)
        if said and not said.startswith("a repetition loop"):
            return said
    upto = len(stripped) // text.STREAM_LOOP_STEP * text.STREAM_LOOP_STEP
    return text._loop(stripped[:upto]) if upto else None


def test_the_distinct_token_bound_changes_no_answer():
    """degenerate() counts the commonest token only when the distinct tokens leave it room to be 80 %
    (5 (d - 1) <= n): the same answer as counting always, on texts at and around that edge, whole
    and as every prefix a stream is asked about."""
    import random

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(["the", "the", "the", "!", " ", "a", "b", ".", "x1", "\n"]), max_size=60),
           st.integers(0, 2 ** 16))
    def check(parts, seed):
        t = "".join(parts) if not seed % 3 else " ".join(parts)
        assert text.degenerate(t) == _degenerate_by_definition(t)
        for cut in range(0, len(t) + 1, 1 + seed % 5):
            assert text.degenerate_so_far(t[:cut]) == _so_far_by_definition(t[:cut])
    check()
    rng = random.Random(36)
    for n in range(4, 60):  # exactly at the bound: n - (d - 1) of the commonest, d distinct
        for d in range(1, n + 1):
            toks = ["w"] * (n - d + 1) + [f"o{i}" for i in range(d - 1)]
            rng.shuffle(toks)
            t = " ".join(toks)
            assert text.degenerate(t) == _degenerate_by_definition(t), (n, d)


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
        so_far += f" The hills around it are green, {len(so_far)} steps on."
    assert sanity.degenerate_so_far(so_far) is None
    first = len(calls)
    for _ in range(200):   # the chunks after the window
        so_far += " More."
        assert sanity.degenerate_so_far(so_far) is None
    assert len(calls) == first, f"the full window was tokenised {len(calls) - first} more times"
