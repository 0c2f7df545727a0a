"""The unit tier's guard and the one-tier rule (selftest/tiers.py); the end-to-end proof that
selftest/conftest.py applies both is selftest/test_tier_marks.py."""
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from rackgate import simrack
from selftest import tiers

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("found, said", [([], "no tier mark"), (["suite", "unit"], "2 tier marks (suite, unit)")])
def test_a_module_without_exactly_one_tier_is_named_in_one_line(found, said):
    line = tiers.problem("selftest.test_x", found)
    assert "selftest.test_x" in line and said in line and "\n" not in line
    assert tiers.problem("selftest.test_x", ["unit"]) == ""


def test_the_hand_out_order_puts_the_matrix_first_and_the_unit_tier_last():
    assert min(tiers.TIERS, key=lambda t: tiers.TIERS[t][1]) == "matrix"
    assert max(tiers.TIERS, key=lambda t: tiers.TIERS[t][1]) == "unit"


SELFTEST = Path(tiers.__file__).resolve().parent


def test_every_group_the_schedule_names_exists():
    """A module renamed or removed while LONG or SHARED still names it would lose its place
    silently: each name is a self-test module, a SHARED group, or a group a module's tests name."""
    def module_exists(name: str) -> bool:
        return (SELFTEST.parent / (name.replace(".", "/") + ".py")).is_file()
    for group, modules in tiers.SHARED.items():
        assert modules and all(module_exists(m) for m in modules), (group, modules)
    named = {m.group(1) for f in SELFTEST.rglob("test_*.py")
             for m in re.finditer(r'xdist_group\(f?"([a-z_]+)', f.read_text())}
    for group in (*tiers.LONG, *tiers.WAITS):
        assert group in tiers.SHARED or module_exists(group) or any(group.startswith(n) for n in named), group
    assert len({g for mods in tiers.SHARED.values() for g in mods}) == sum(map(len, tiers.SHARED.values()))


class _Item:
    def __init__(self, group: str, tier: str):
        self.marks = {"xdist_group": pytest.mark.xdist_group(group).mark, tier: getattr(pytest.mark, tier).mark}

    def get_closest_marker(self, name):
        return self.marks.get(name)


def test_the_long_groups_go_first_longest_first_then_the_rest_by_tier():
    longest, second = sorted(tiers.LONG, key=tiers.LONG.__getitem__, reverse=True)[:2]
    items = [_Item("selftest.test_x_unit", "unit"), _Item("selftest.test_x_suite", "suite"),
             _Item(second, "suite"), _Item("selftest.test_x_matrix", "matrix"), _Item(longest, "realengine")]
    got = [it.marks["xdist_group"].args[0] for it in sorted(items, key=tiers.order)]
    assert got == [longest, second, "selftest.test_x_matrix", "selftest.test_x_suite", "selftest.test_x_unit"]
    assert tiers.group_of("selftest.realengine.test_partly_broken") == "realengine-gate"
    assert tiers.group_of("selftest.test_x_suite") == "selftest.test_x_suite"


def test_the_waiting_groups_go_out_while_the_longest_still_run():
    """A WAITS group, however short, goes out right after the groups of WAITS_AFTER s or more and
    before the shorter long groups and the rest, its waits overlapping CPU-bound work (not the tail)."""
    by_length = sorted(tiers.LONG, key=tiers.LONG.__getitem__, reverse=True)
    longest = [g for g in by_length if tiers.LONG[g] >= tiers.WAITS_AFTER and g not in tiers.WAITS]
    shorter = next(g for g in by_length if tiers.LONG[g] < tiers.WAITS_AFTER and g not in tiers.WAITS)
    waiting = min(tiers.WAITS, key=lambda g: tiers.LONG.get(g, 0))  # the shortest of them
    assert longest and tiers.LONG.get(waiting, 0) < tiers.LONG[shorter]
    items = [_Item("selftest.test_x_unit", "unit"), _Item(shorter, "suite"), _Item(waiting, "suite"),
             _Item(longest[0], "realengine"), _Item("selftest.test_x_matrix", "matrix")]
    got = [it.marks["xdist_group"].args[0] for it in sorted(items, key=tiers.order)]
    assert got == [longest[0], waiting, shorter, "selftest.test_x_matrix", "selftest.test_x_unit"]


def test_group_seconds_read_from_a_whole_runs_junit(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="selftest.test_a" name="test_one" time="2.5"/>'
        '<testcase classname="selftest.test_a" name="test_two[x@y]" time="1.5"/>'
        '<testcase classname="selftest.test_tool_failures" name="test_t[fabric]@tool_failures_fabric" time="9"/>'
        '<testcase classname="selftest.realengine.test_engine" name="test_e@realengine" time="4"/>'
        '</testsuite></testsuites>')
    assert tiers.group_seconds(str(junit)) == {"tool_failures_fabric": 9.0, "selftest.test_a": 4.0,
                                              "realengine-suite": 4.0}


def test_the_unit_guard_refuses_a_process_a_server_and_a_sim_build_naming_the_test():
    before = (subprocess.Popen.__init__, socket.socket.listen, os.fork)
    with tiers.unit_guard("selftest/test_x.py::test_y"):
        with pytest.raises(tiers.OutsideUnitTier, match=r"test_x.py::test_y is marked `unit` but started a subprocess"):
            subprocess.run(["true"])
        with pytest.raises(tiers.OutsideUnitTier, match="os.fork"):
            os.fork()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            with pytest.raises(tiers.OutsideUnitTier, match="listened on a socket"):
                s.listen()
        with pytest.raises(tiers.OutsideUnitTier, match="built the sim"):
            simrack.build(None, [])  # type: ignore[arg-type]
    assert (subprocess.Popen.__init__, socket.socket.listen, os.fork) == before
