"""Tiers with budgets (rackgate/catalogue/tiers.toml, rackgate/hooks/tier.py): each tier a
selection of rows with a budget, nested by cost; the budget's arithmetic on an injected clock."""
import pytest

from rackgate.catalogue import Tier, rows, tiers
from rackgate.hooks.tier import Budget

pytestmark = pytest.mark.unit


def test_quick_standard_full_nest_and_their_budgets_grow():
    t = tiers()
    assert list(t)[:3] == ["quick", "standard", "full"]
    sel = {name: {r for r in rows() if tier.selects(r)} for name, tier in t.items()}
    assert sel["quick"] < sel["standard"] < sel["full"] == set(rows())
    assert t["quick"].budget_s <= 120 < t["standard"].budget_s < t["full"].budget_s
    assert {"PLAT-DRIVER", "PLAT-RAS", "FAB-STATE", "SRV-ALIVE"} <= sel["quick"]
    assert not {"FAB-P2P", "FAB-COLLECTIVE", "ACC-QUICK", "ACC-GSM8K"} & sel["quick"]
    assert {"FAB-P2P", "FAB-COLLECTIVE", "SRV-SANITY", "ACC-QUICK"} <= sel["standard"]
    assert not {"ACC-GSM8K", "SRV-LONGCTX", "SRV-GOLDEN"} & sel["standard"]


def test_a_tier_needs_a_budget_and_rows():
    with pytest.raises(ValueError):
        Tier(name="x", budget_s=0, when="w", rows=("PLAT-*",))
    with pytest.raises(ValueError):
        Tier(name="x", budget_s=5, when="w", rows=())


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_the_budget_is_spent_at_its_second_and_says_what_it_left():
    clock = Clock()
    b = Budget(tiers()["quick"], 120, 100.0, clock)
    clock.t = 219.9
    assert not b.spent() and b.overrun() == ""
    clock.t = 220.0
    assert b.spent()
    assert "tier quick: its budget of 120 s was spent (120 s elapsed) before this item started" in b.why()
    assert b.overrun().endswith("every item ran, the last past the budget")
    b.left += ["t::a", "t::b"]
    assert b.overrun() == "tier quick did not finish in its budget of 120 s (120 s): 2 item(s) left, not judged"


def test_an_item_runs_under_what_is_left_of_the_budget_when_that_is_less_than_its_own_timeout():
    clock = Clock()
    b = Budget(tiers()["quick"], 120, 100.0, clock)
    clock.t = 150.0
    assert b.cap(300.0) == 70.0 and b.cap(None) == 70.0 and b.cap(0) == 70.0
    assert b.cap(60.0) is None           # its own timeout is the shorter: it stands
    clock.t = 220.0
    assert b.cap(300.0) is None          # spent: the item is left before it starts
    b.cut.append("t::c")
    b.left.append("t::d")
    assert b.overrun().endswith("1 item(s) left, not judged; 1 cut at the budget")
