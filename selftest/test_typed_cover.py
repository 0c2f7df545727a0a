"""selftest/typed.py's pairwise cover, which picks the rows of the typed-forms self-test: every pair
of values an allowed row holds is held by a chosen row; every chosen row is allowed and holds a pair
no other chosen row holds; fewer rows than the product."""
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
    for i in range(len(rows)):   # no row is there for nothing: each holds a pair no other row holds
        others = {p for r in rows[:i] + rows[i + 1:] for p in itertools.combinations(sorted(r.items()), 2)}
        assert not {p for p in itertools.combinations(sorted(rows[i].items()), 2)} <= others, rows[i]


def test_the_cover_is_much_smaller_than_the_product():
    dims = {"launcher": list("abcd"), "form": list("ab"), "paths": list("ab"), "cwd": list("abc")}
    assert len(pairwise(dims)) <= 13 < 4 * 2 * 2 * 3


def test_the_typed_forms_rows_are_the_fewest_a_cover_can_have():
    """10 allowed launcher x directory pairs (no wheel run from the checkout): 10 rows at least."""
    dims = {"launcher": list("abcd"), "form": list("ab"), "paths": list("ab"), "cwd": list("abc")}
    assert len(pairwise(dims, lambda r: not (r["launcher"] in "cd" and r["cwd"] == "a"))) == 10
