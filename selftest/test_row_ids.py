"""Ids that name the row and the place (issue 56): `-k PLAT-DRIVER` selects the row's items and no
other, `-k node3` every item on node3 and no other, a row or an item given as a test path is
collected from any directory, and the ids are those a checkout's run gives."""
from __future__ import annotations

import subprocess

import pytest

from rackgate.ids import check_of, is_row_id, place_of

from .harness import selected, suite_command, suite_env

pytestmark = pytest.mark.suite


def test_k_of_a_row_selects_its_items_and_k_of_a_node_what_is_on_it(tmp_path):
    every = selected(tmp_path / "all")
    row = selected(tmp_path / "row", "-k", "PLAT-DRIVER")
    on = selected(tmp_path / "node3", "-k", "node3")
    assert row == {f"PLAT-DRIVER::node{n}" for n in range(1, 5)}, sorted(row)
    assert on and on == {i for i in every if "node3" in place_of(i)}, sorted(on ^ {i for i in every if "node3" in place_of(i)})
    # a node's items are its own, its GPUs', its pairs' and its ranks' -- across areas
    assert {check_of(i) for i in on} >= {"PLAT-DRIVER", "FAB-STATE", "FAB-P2P", "SRV-ALIVE"}, sorted(on)[:20]
    assert all(is_row_id(i) and "::" in i for i in every if not i.startswith("rackgate/checks/")), sorted(every)[:5]


def test_a_row_and_an_item_are_test_paths_from_any_directory(tmp_path):
    here = tmp_path / "elsewhere"
    here.mkdir()
    cmd = suite_command(here, ("--collect-only", "PLAT-DRIVER", "SRV-GOLDEN::node3-dp9", "-k", "node1 or node3"), False)
    p = subprocess.run(cmd, cwd=here, env=suite_env(), capture_output=True, text=True, timeout=120)
    got = {line for line in p.stdout.splitlines() if "::" in line and not line.startswith(" ")}
    assert p.returncode == 0 and got == {"PLAT-DRIVER::node1", "PLAT-DRIVER::node3", "SRV-GOLDEN::node3-dp9"}, \
        p.stdout[-2000:] + p.stderr[-1000:]
