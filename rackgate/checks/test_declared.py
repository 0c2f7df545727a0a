"""Every declared check (rackgate/gates/declare.py), one item per node or per GPU:
probe -> evidence -> facts -> judge -> check() with the row's diagnosis. A probe that cannot look
raises CouldNotObserve (ERROR); the row marker gives the item its -m markers. A "rack" check reads
every node that answers once per session (concurrently) and judges each node's item across them."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from rackgate.catalogue import row
from rackgate.errors import CouldNotObserve
from rackgate.gates.declare import Across, Check, declared
from rackgate.probes.target import On
from rackgate.report.verdict import check
from rackgate.transport import fanout


def run(c: Check[Any], on: On, evidence: Any, facts: Any, read: Callable[[], Any]) -> None:
    reason = c.applies(on.rack) if c.applies is not None else ""
    if reason:
        pytest.skip(reason)
    got = read()
    for s in c.shows(got, on.rack):
        evidence.attach(s.name, s.text, kind=s.kind)
    for f in c.facts(got, on.key) if c.facts is not None else ():
        facts.record(f.name, f.value, where=f.where or on.key, unit=f.unit, row=c.row)
    found = c.judge(got, on.rack, on.where)
    check(not found, c.row, on.where, "; ".join(found))


def read_across(c: Check[Any], rack: Any, hosts: Any) -> tuple[dict[str, Any], dict[str, CouldNotObserve]]:
    """A "rack" check's probe on every node that answers, at once: (facts, could-not-observe) by node;
    an unreachable node is unseen in ssh's words."""
    names = list(hosts)
    got = fanout(names, lambda n: c.probe(On(rack, hosts[n], n)))
    facts: dict[str, Any] = {}
    unseen: dict[str, CouldNotObserve] = {n: e if isinstance(e, CouldNotObserve) else CouldNotObserve(str(e))
                                          for n, e in hosts.missing.items()}
    for n, g in zip(names, got):
        if isinstance(g, CouldNotObserve):
            unseen[n] = g
        elif isinstance(g, Exception):
            raise g  # a bug of ours: the item's internal error
        else:
            facts[n] = g
    return facts, unseen


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
                read_once[c.row] = read_across(c, rack, hosts)
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


for _c in declared().values():
    globals()[_c.test_name] = _item(_c)
