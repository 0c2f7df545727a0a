"""The nodes' hook: per-node and per-GPU parametrization from the rack file (ids name the node and
GPU); the `node`, `gpu` and `hosts` fixtures are rackgate/fixtures/nodes.py's."""
from __future__ import annotations

import pytest

from rackgate.fixtures.rack import get_rack


def pytest_generate_tests(metafunc):
    if not {"node", "gpu"} & set(metafunc.fixturenames):
        return
    rack = get_rack(metafunc.config)
    if not rack.nodes:  # attached without a rack file: its own profile names no node to read
        name = "gpu" if "gpu" in metafunc.fixturenames else "node"
        from rackgate.fixtures.server import NO_LOGS  # a node's server log (sees="log"): said as the log checks say it
        why = NO_LOGS if "server_logs" in metafunc.fixturenames else \
            "attached without a rack file (--atom-url): no nodes to read; give --rack to read them"
        metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(reason=why))],
                             indirect=True, ids=["no-nodes"])
        return
    if "gpu" in metafunc.fixturenames:
        refs = [(n.name, g) for n in rack.nodes for g in range(rack.gpus_per_node)]
        metafunc.parametrize("gpu", refs, indirect=True, ids=[f"{n}-card{g}" for n, g in refs])
    elif "node" in metafunc.fixturenames:
        names = [n.name for n in rack.nodes]
        metafunc.parametrize("node", names, indirect=True, ids=names)
