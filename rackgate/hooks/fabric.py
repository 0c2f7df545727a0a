"""The fabric's hook: per-pair parametrization (ids name both nodes: node1-node2); the `pair` and
session-run fixtures are rackgate/fixtures/fabric.py's."""
from __future__ import annotations

import pytest

from rackgate.fabric import pairs
from rackgate.fixtures.rack import get_rack
from rackgate.probes.pair_runs import pair_id


def pytest_generate_tests(metafunc):
    if "pair" not in metafunc.fixturenames:
        return
    rack = get_rack(metafunc.config)
    ps = pairs.triangles([n.name for n in rack.nodes])
    if not ps:
        metafunc.parametrize("pair", [pytest.param(None, marks=pytest.mark.skip(
            reason="the rack file lists one node: ubench07 needs a peer"))], ids=["no-pair"])
        return
    metafunc.parametrize("pair", ps, indirect=True, ids=[pair_id(p) for p in ps])
