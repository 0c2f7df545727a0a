"""ubench07 at rack scale: every tray paired with two peers in the fewest rounds, no node twice a round."""
import pytest

from rackgate.config.fabric import FabricExpect
from rackgate.fabric import pairs

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 8, 18, 63, 64])
def test_plan_is_minimal_and_disjoint(n):
    nodes = [f"node{i}" for i in range(1, n + 1)]
    plan = pairs.plan(nodes)
    assert len(plan) == pairs.min_rounds(n)
    met = {x: set() for x in nodes}
    for rnd in plan:
        flat = [x for p in rnd for x in p]
        assert len(flat) == len(set(flat)), rnd
        for a, b in rnd:
            met[a].add(b)
            met[b].add(a)
    assert all(len(s) >= min(2, n - 1) for s in met.values())


def test_tournament_has_every_pair_once():
    nodes = [f"n{i}" for i in range(9)]
    t = pairs.tournament(nodes)
    got = [frozenset(p) for r in t for p in r]
    assert len(got) == len(set(got)) == 36 and len(t) == 9


def test_four_trays_take_two_rounds_and_the_estimate_is_printed_from_the_rack_file():
    plan = pairs.plan(["a", "b", "c", "d"])
    assert len(plan) == 2 and sum(len(r) for r in plan) == 4   # the triangles needed 5 pairs in 3+ rounds
    text = pairs.describe_plan(plan, FabricExpect())
    assert "4 pairs in 2 rounds" in text and "at most 960s" in text   # 2 rounds x (2x30 + 120 + 300)
