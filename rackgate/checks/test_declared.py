"""Every declared check (rackgate/gates/declare.py), one item per node, per GPU or per ubench07 pair:
probe -> evidence -> facts -> judge -> check() with the row's diagnosis. A probe that cannot look
raises CouldNotObserve (ERROR); the row marker gives the item its -m markers. A "rack" check reads
every node that answers once per session (concurrently) and judges each node's item across them.
Every item's probe may ask for the session's shared fabric runs (`on.ubench(tool)`, `on.collective()`:
each run once, the first time one asks; rackgate/fixtures/fabric.py ubench_runs, collective_runs)."""
from __future__ import annotations

from typing import Any, Callable, cast

import pytest

from rackgate.catalogue import row
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.nodes import discovered_cards
from rackgate.gates.declare import Across, Check, declared
from rackgate.probes.target import On, OnPair
from rackgate.report.verdict import check
from rackgate.transport import fanout


def run(c: Check[Any], on: On | OnPair, evidence: Any, facts: Any, read: Callable[[], Any]) -> None:
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


def read_across(c: Check[Any], rack: Any, hosts: Any, session: dict[str, Any] | None = None
                ) -> tuple[dict[str, Any], dict[str, CouldNotObserve]]:
    """A "rack" check's probe on every node that answers, at once: (facts, could-not-observe) by node;
    an unreachable node is unseen in ssh's words. `session`: the session's shared runs (_session)."""
    names = list(hosts)
    got = fanout(names, lambda n: c.probe(On(rack, hosts[n], n, **(session or {}))))
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


def _session(request: Any, now: bool = False) -> dict[str, Any]:
    """What every item's `On` carries of the session's shared runs, each run the first time a probe
    asks (not before): the ubench07 rounds by tool, the collective run by node. Their fixtures are
    looked up when a probe asks, or `now` (before a "rack" check's probes run in threads)."""
    if now:
        ubench, coll = request.getfixturevalue("ubench_runs"), request.getfixturevalue("collective_runs")
        return {"rounds": ubench.get, "collectives": coll.get}
    return {"rounds": lambda tool: request.getfixturevalue("ubench_runs").get(tool),
            "collectives": lambda: request.getfixturevalue("collective_runs").get()}


def _per_gpu(c: Check[Any]) -> Callable[..., None]:
    def item(gpu: Any, rack: Any, request: Any, evidence: Any, facts: Any) -> None:
        on = On(rack, gpu.node.host, gpu.node.name, gpu.index, gpu.drm_card, **_session(request))
        run(c, on, evidence, facts, lambda: c.probe(on))
    return item


def _per_node(c: Check[Any]) -> Callable[..., None]:
    def item(node: Any, rack: Any, request: Any, evidence: Any, facts: Any) -> None:
        on = On(rack, node.host, node.name, **_session(request))
        run(c, on, evidence, facts, lambda: c.probe(on))
    return item


def _per_pair(c: Check[Any]) -> Callable[..., None]:
    """One item per ubench07 pair (the `pair` fixture: rackgate/fixtures/fabric.py)."""
    def item(pair: Any, rack: Any, request: Any, evidence: Any, facts: Any) -> None:
        session = _session(request)
        on = OnPair(rack, On(rack, pair.a.host, pair.a.name, **session), On(rack, pair.b.host, pair.b.name, **session),
                    cards=lambda: discovered_cards(request.config, request.getfixturevalue("hosts")))
        probe = cast(Callable[[OnPair], Any], c.probe)  # a "pair" check's probe takes OnPair (declare.per_pair)
        run(c, on, evidence, facts, lambda: probe(on))
    return item


def _per_rack(c: Check[Any]) -> Callable[..., None]:
    def item(node: Any, rack: Any, hosts: Any, read_once: Any, request: Any, evidence: Any, facts: Any) -> None:
        def read() -> Across[Any]:
            if c.row not in read_once:
                read_once[c.row] = read_across(c, rack, hosts, _session(request, now=True))
            every, unseen = read_once[c.row]
            return Across(node.name, every, unseen)
        run(c, On(rack, node.host, node.name), evidence, facts, read)
    return item


# scope -> its item maker
ITEMS: dict[str, Callable[[Check[Any]], Callable[..., None]]] = {
    "gpu": _per_gpu,
    "node": _per_node,
    "rack": _per_rack,
    "pair": _per_pair,
}


def _item(c: Check[Any]) -> Callable[..., None]:
    """The check's pytest function: named for its row, marked with it (markers come from the row),
    parametrized by the `node` / `gpu` / `pair` fixtures (fixtures/nodes.py, fixtures/fabric.py)."""
    item = ITEMS[c.per](c)
    item.__name__ = item.__qualname__ = c.test_name
    item.__doc__ = f"{c.row}: {row(c.row).title}"
    marked: Callable[..., None] = pytest.mark.row(c.row)(item)
    return marked


for _c in declared().values():
    globals()[_c.test_name] = _item(_c)
