"""selftest/typed.py's pairwise cover, which picks the rows of the typed-forms self-test: every pair
of values an allowed row holds is held by a chosen row; every chosen row is allowed; fewer rows than
the product."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .typed import pairwise

pytestmark = pytest.mark.unit

dims_st = st.dictionaries(st.sampled_from("abcde"), st.lists(st.sampled_from("uvwxyz"), min_size=1, max_size=4, unique=True),
                          min_size=2, max_size=4)


@given(dims_st, st.sampled_from("uvwxyz"))
def test_every_pair_of_the_allowed_rows_is_covered(dims, banned):
    def allowed(r):   # a constraint on one dimension
        return list(r.values())[0] != banned
    rows = pairwise(dims, allowed)
    every = [dict(zip(dims, v)) for v in itertools.product(*dims.values())]
    assert all(allowed(r) for r in rows)
    want = {p for r in every if allowed(r) for p in itertools.combinations(sorted(r.items()), 2)}
    got = {p for r in rows for p in itertools.combinations(sorted(r.items()), 2)}
    assert want <= got
    assert len(rows) <= len([r for r in every if allowed(r)])


def test_the_cover_is_much_smaller_than_the_product():
    dims = {"launcher": list("abcd"), "form": list("ab"), "paths": list("ab"), "cwd": list("abc")}
    assert len(pairwise(dims)) <= 13 < 4 * 2 * 2 * 3
