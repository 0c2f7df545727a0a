"""selftest/test_tool_failures.py's before_first: a failing run leaves out only the items the
healthy run ran before any of its failing commands went out (by the item pytest was running, not
the check a command was sent for), and none where such a command went out outside an item."""
from __future__ import annotations

import pytest

from .test_tool_failures import before_first

pytestmark = pytest.mark.unit

ORDER = ["t::a[1]", "t::a[2]", "t::b[1]", "t::c[1]"]


def _sent(tool: str, test: str, running: str) -> dict:
    return {"tool": tool, "node": "node1", "test": test, "way": None, "running": running}


def test_the_items_before_the_first_sender_are_left_out():
    sent = [_sent("x", "t::a[1]", "t::a[1]"), _sent("y", "t::b[1]", "t::b[1]"), _sent("y", "t::c[1]", "t::c[1]")]
    assert before_first(ORDER, sent, {"y"}) == ["t::a[1]", "t::a[2]"]
    assert before_first(ORDER, sent, {"x", "y"}) == []
    assert before_first(ORDER, sent, {"never-sent"}) == []


def test_a_command_sent_for_a_later_check_counts_where_it_went_out():
    # the hardware bracket's snapshot: sent while the first item runs, for the row judged last
    sent = [_sent("dmesg", "t::c[1]", "t::a[1]"), _sent("y", "t::b[1]", "t::b[1]")]
    assert before_first(ORDER, sent, {"dmesg"}) == []


def test_a_command_sent_outside_an_item_keeps_every_item():
    sent = [_sent("true", "", ""), _sent("true", "t::b[1]", "t::b[1]")]
    assert before_first(ORDER, sent, {"true"}) == []
    assert before_first(ORDER, [_sent("z", "t::zz", "t::zz")], {"z"}) == []   # an item the order lacks
