"""Every declared check (rackgate/gates/declare.py), one item per node or per GPU:
probe -> evidence -> facts -> judge -> check() with the row's diagnosis. A probe that cannot look
raises CouldNotObserve (ERROR); the row marker gives the item its -m markers."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from rackgate.catalogue import row
from rackgate.gates.declare import Check, declared
from rackgate.probes.target import On
from rackgate.report.verdict import check


def run(c: Check[Any], on: On, evidence: Any, facts: Any) -> None:
    reason = c.applies(on.rack) if c.applies is not None else ""
    if reason:
        pytest.skip(reason)
    got = c.probe(on)
    for s in c.shows(got, on.rack):
        evidence.attach(s.name, s.text, kind=s.kind)
    for f in c.facts(got, on.key) if c.facts is not None else ():
        facts.record(f.name, f.value, where=f.where or on.key, unit=f.unit, row=c.row)
    found = c.judge(got, on.rack, on.where)
    check(not found, c.row, on.where, "; ".join(found))


def _per_gpu(c: Check[Any]) -> Callable[..., None]:
    def item(gpu: Any, rack: Any, evidence: Any, facts: Any) -> None:
        run(c, On(rack, gpu.node.host, gpu.node.name, gpu.index, gpu.drm_card), evidence, facts)
    return item


def _per_node(c: Check[Any]) -> Callable[..., None]:
    def item(node: Any, rack: Any, evidence: Any, facts: Any) -> None:
        run(c, On(rack, node.host, node.name), evidence, facts)
    return item


def _item(c: Check[Any]) -> Callable[..., None]:
    """The check's pytest function: named for its row, marked with it (markers come from the row),
    parametrized by the `node` / `gpu` fixtures (fixtures/nodes.py)."""
    item = _per_gpu(c) if c.per == "gpu" else _per_node(c)
    item.__name__ = item.__qualname__ = c.test_name
    item.__doc__ = f"{c.row}: {row(c.row).title}"
    marked: Callable[..., None] = pytest.mark.row(c.row)(item)
    return marked


for _c in declared().values():
    globals()[_c.test_name] = _item(_c)
