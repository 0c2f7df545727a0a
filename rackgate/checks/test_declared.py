"""Every declared check (the registry, rackgate/registry/), one item per node or per GPU:
probe -> evidence -> facts -> judge (registry.judge_on) -> check() with the row's diagnosis. A probe that cannot look
raises CouldNotObserve (ERROR); the row marker gives the item its -m markers. A "rack" check reads
every node that answers once per session (concurrently) and judges each node's item across them."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from rackgate import registry
from rackgate.catalogue import row
from rackgate.errors import CouldNotObserve
from rackgate.gates.declare import Across, Check
from rackgate.probes.target import On
from rackgate.report.verdict import check


def run(c: Check[Any], on: On, evidence: Any, facts: Any, read: Callable[[], Any]) -> None:
    reason = c.applies(on.rack) if c.applies is not None else ""
    if reason:
        pytest.skip(reason)
    got = registry.judge_on(c, on, read)
    for s in got.shown:
        evidence.attach(s.name, s.text, kind=s.kind)
    for f in got.facts:
        facts.record(f.name, f.value, where=f.where or on.key, unit=f.unit, row=c.row)
    if got.error is not None:
        raise got.error
    check(not got.findings, c.row, on.where, "; ".join(got.findings))


@pytest.fixture(scope="session")
def read_once() -> dict[str, tuple[dict[str, Any], dict[str, CouldNotObserve]]]:
    """row -> what its "rack" check read on every node, this session."""
    return {}


def _per_gpu(c: Check[Any]) -> Callable[..., None]:
    def item(gpu: Any, rack: Any, evidence: Any, facts: Any) -> None:
        on = On(rack, gpu.node.host, gpu.node.name, gpu.index, gpu.drm_card)
        run(c, on, evidence, facts, lambda: c.probe(on))
    return item


def _per_node(c: Check[Any]) -> Callable[..., None]:
    def item(node: Any, rack: Any, evidence: Any, facts: Any) -> None:
        on = On(rack, node.host, node.name)
        run(c, on, evidence, facts, lambda: c.probe(on))
    return item


def _per_rack(c: Check[Any]) -> Callable[..., None]:
    def item(node: Any, rack: Any, hosts: Any, read_once: Any, evidence: Any, facts: Any) -> None:
        def read() -> Across[Any]:
            if c.row not in read_once:
                read_once[c.row] = registry.read_across(c, rack, hosts, hosts.missing)
            every, unseen = read_once[c.row]
            return Across(node.name, every, unseen)
        run(c, On(rack, node.host, node.name), evidence, facts, read)
    return item


def _item(c: Check[Any]) -> Callable[..., None]:
    """The check's pytest function: named for its row, marked with it (markers come from the row),
    parametrized by the `node` / `gpu` fixtures (fixtures/nodes.py)."""
    item = {"gpu": _per_gpu, "node": _per_node, "rack": _per_rack}[c.per](c)
    item.__name__ = item.__qualname__ = c.test_name
    item.__doc__ = f"{c.row}: {row(c.row).title}"
    marked: Callable[..., None] = pytest.mark.row(c.row)(item)
    return marked


for _c in registry.checks().values():
    globals()[_c.test_name] = _item(_c)
