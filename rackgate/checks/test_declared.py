"""Every declared check (the registry, rackgate/registry/), one item per node, GPU, ubench07 pair,
server or DP rank: probe -> evidence -> facts -> judge (registry.judge_at) -> check() with the row's
diagnosis. A probe that cannot look raises CouldNotObserve (ERROR); the row marker gives the item its -m
markers. A "rack" check reads every node that answers once per session (concurrently) and judges each
node's item across them; a "rank" check asks every DP rank once per session and judges each rank's item
on its answers; a "rack-gpu" check reads every node once per session and judges each GPU's item across
them. Every item's probe may ask for the session's shared fabric runs (`on.ubench(tool)`,
`on.collective()`: each run once, the first time one asks; rackgate/fixtures/fabric.py ubench_runs,
collective_runs), the hardware-error bracket's rises on its node (`on.charged(stages)`,
rackgate/fixtures/bracket.py) and the recorded baseline (`on.baseline()`). Each scope's item maker is
one entry of ITEM_MAKERS."""
from __future__ import annotations

from typing import Any, Callable, cast

import pytest

from rackgate import registry
from rackgate.atom.logs import rank_table
from rackgate.catalogue import row
from rackgate.errors import CouldNotObserve
from rackgate.fixtures import bracket
from rackgate.fixtures.nodes import discovered_cards
from rackgate.fixtures.server import blocked
from rackgate.gates.declare import UNRANKED, Across, Check, Finding, Ranked, qualname
from rackgate.probes import boot as boot_probe
from rackgate.probes.target import On, OnPair, Recorded, ServerLogs
from rackgate.report.verdict import check, fail


def run(c: Check[Any], on: On | OnPair, evidence: Any, facts: Any, read: Callable[[], Any]) -> None:
    judge(c, on.rack, on.key, on.where, evidence, facts, read)


def judge(c: Check[Any], rack: Any, key: str, where: str, evidence: Any, facts: Any, read: Callable[[], Any]) -> None:
    """One item: applies? -> read, show, record, judge (registry.judge_at) -> the row's verdict at `where`."""
    reason = c.applies(rack) if c.applies is not None else ""
    if reason:
        pytest.skip(reason)
    got = registry.judge_at(c, rack, key, where, read)
    for s in got.shown:
        evidence.attach(s.name, s.text, kind=s.kind)
    for f in got.facts:
        facts.record(f.name, f.value, where=f.where or key, unit=f.unit, row=c.row)
    for name, value in got.kept.items():  # recording: sets beside the facts (Check.keeps)
        facts.keep(name, value)
    if got.error is not None:
        raise got.error
    placed = next((f for f in got.findings if isinstance(f, Finding)), None)
    if placed is not None:  # its own place, reading or row (gates/declare.py Finding); the text names them all
        fail(placed.row or c.row, placed.where or where, "; ".join(got.findings), placed.means, also=placed.also)
    check(not got.findings, c.row, where, "; ".join(got.findings))


@pytest.fixture(scope="session")
def read_once() -> dict[str, Any]:
    """row -> what its "rack" check read on every node (or its "rank" check of every rank), and a
    "server" probe's name -> what it read, this session."""
    return {}


def _session(request: Any, now: bool = False) -> dict[str, Any]:
    """What every item's `On` carries of what the session shares, each the first time a probe asks
    (not before): the ubench07 rounds by tool, the collective run by node, the hardware-error
    bracket (rackgate/fixtures/bracket.py) and the recorded baseline. Their fixtures are looked up
    when a probe asks, or `now` (before a "rack" check's probes run in threads)."""
    config = request.config

    def recorded() -> Recorded:
        return Recorded(request.getfixturevalue("baseline"), bool(config.option.record_baseline))
    shared: dict[str, Any] = {"bracket": lambda: bracket.of_session(config), "recorded": recorded}
    if not now:
        return {"rounds": lambda tool: request.getfixturevalue("ubench_runs").get(tool),
                "collectives": lambda: request.getfixturevalue("collective_runs").get(),
                "datachecks": lambda: request.getfixturevalue("datacheck_runs").get(), **shared}
    ubench, coll = request.getfixturevalue("ubench_runs"), request.getfixturevalue("collective_runs")
    data = request.getfixturevalue("datacheck_runs")
    return {"rounds": ubench.get, "collectives": coll.get, "datachecks": data.get, **shared,
            "recorded": _here(recorded)}


def _here(fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn` called now, in the item's thread; what it gave (or raised) handed to the probe that asks,
    in any thread (a baseline that cannot be loaded is that probe's, not every "rack" check's)."""
    try:
        got = fn()
    except Exception as e:  # noqa: BLE001 -- raised again where a probe asks
        err = e

        def again() -> Any:
            raise err
        return again
    return lambda: got


def _per_gpu(c: Check[Any]) -> Callable[..., None]:
    def item(gpu: Any, rack: Any, request: Any, evidence: Any, facts: Any) -> None:
        on = On(rack, gpu.node.host, gpu.node.name, gpu.index, gpu.drm_card, **_session(request))
        run(c, on, evidence, facts, lambda: c.probe(on))
    return item


def _boot(request: Any) -> Any:
    """How the launched server's boot ended (probes/boot.py `Boot`; None attached: not watched)."""
    s = request.getfixturevalue("atom_server")
    return boot_probe.boot(s) if s.boot is not None else None


def _per_node(c: Check[Any]) -> Callable[..., None]:
    def item(node: Any, rack: Any, request: Any, evidence: Any, facts: Any) -> None:
        logs: dict[str, Any] = {"server_logs": lambda: request.getfixturevalue("server_logs"),
                                "boot": lambda: _boot(request)} if c.sees == "log" else {}
        on = On(rack, node.host, node.name, **_session(request), **logs)
        run(c, on, evidence, facts, lambda: c.probe(on))
    # sees="log": the server's logs (launching it first) are the item's fixture, so the item is one
    # of the server's (its xdist group, rackgate/fixtures/server.py)
    if c.sees != "log":
        return item
    marked: Callable[..., None] = pytest.mark.usefixtures("server_logs")(item)  # (a mark changes the function)
    return marked


def _per_pair(c: Check[Any]) -> Callable[..., None]:
    """One item per ubench07 pair (the `pair` fixture: rackgate/fixtures/fabric.py)."""
    def item(pair: Any, rack: Any, request: Any, evidence: Any, facts: Any) -> None:
        session = _session(request)
        on = OnPair(rack, On(rack, pair.a.host, pair.a.name, **session), On(rack, pair.b.host, pair.b.name, **session),
                    cards=lambda: discovered_cards(request.config, request.getfixturevalue("hosts")))
        probe = cast(Callable[[OnPair], Any], c.probe)  # a "pair" check's probe takes OnPair (declare.per_pair)
        run(c, on, evidence, facts, lambda: probe(on))
    return item


def _across(c: Check[Any], rack: Any, hosts: Any, read_once: Any, request: Any, node: str,
            gpu: int | None = None) -> Callable[[], Across[Any]]:
    """A "rack" / "rack-gpu" item's read: every node's probe once per session (the first item to ask),
    seen from this item's node (and GPU)."""
    def read() -> Across[Any]:
        if c.row not in read_once:
            read_once[c.row] = registry.read_across(c, rack, hosts, hosts.missing, _session(request, now=True))
        every, unseen = read_once[c.row]
        return Across(node, every, unseen, gpu)
    return read


def _per_rack(c: Check[Any]) -> Callable[..., None]:
    def item(node: Any, rack: Any, hosts: Any, read_once: Any, request: Any, evidence: Any, facts: Any) -> None:
        run(c, On(rack, node.host, node.name), evidence, facts, _across(c, rack, hosts, read_once, request, node.name))
    return item


def _per_rack_gpu(c: Check[Any]) -> Callable[..., None]:
    """One item per GPU, judged across the rack (the nodes read once per session, as "rack")."""
    def item(gpu: Any, rack: Any, hosts: Any, read_once: Any, request: Any, evidence: Any, facts: Any) -> None:
        on = On(rack, gpu.node.host, gpu.node.name, gpu.index, gpu.drm_card)
        run(c, on, evidence, facts, _across(c, rack, hosts, read_once, request, gpu.node.name, gpu.index))
    return item


def _once(read_once: dict[str, Any], key: str, probe: Callable[[], Any]) -> Any:
    """What `probe` read under `key` this session, read the first time one asks; its
    could-not-observe is kept too, and every item that reads it says it."""
    if key not in read_once:
        try:
            read_once[key] = probe()
        except CouldNotObserve as e:
            read_once[key] = e
    got = read_once[key]
    if isinstance(got, CouldNotObserve):
        raise got
    return got


def _not_blocked(c: Check[Any], request: Any, read: bool = True) -> None:
    """What the `server` fixture says of a hand-written check: not run once an earlier row found a
    dead rank (SRV-ALIVE) or a hang (SRV-DEADLOCK) -- the ordering's record, never the row's own
    items' (`read`: the row has read already; before that, its row's record is another row's finding,
    SRV-LONGCTX's hang recorded for SRV-DEADLOCK too, and blocks it as any) --, and a row that needs
    SRV-MODELS not run while the configured name is not served (`serving`)."""
    if "SRV-MODELS" in row(c.row).needs:
        request.getfixturevalue("serving")
    cause = blocked(request.config, c.row if read else None)
    if cause is not None:
        raise cause


# a "server" check's `sees` -> the fixture whose object its probe reads (rackgate/fixtures/server.py)
SERVER_STAGES = {"": "served", "launched": "atom_server", "planned": "planned"}


def _per_server(c: Check[Any]) -> Callable[..., None]:
    """The one endpoint's item, reading the stage of the server's life its check `sees` (served,
    launched, or only planned). Its probe reads once per session: the rows that name one probe share
    its read (BENCH-RESULT and BENCH-AGGREGATE: the one benchmark run), its could-not-observe too. A
    row that needs SRV-MODELS sends the served name: `serving` first (not run, pointing there); a
    served check is not run once a dead rank or a hang is on the ordering's record (`_not_blocked`)."""
    stage = SERVER_STAGES[c.sees]

    def item(rack: Any, read_once: Any, request: Any, evidence: Any, facts: Any) -> None:
        if stage == "served":
            _not_blocked(c, request)
        elif "SRV-MODELS" in row(c.row).needs:
            request.getfixturevalue("serving")
        s = request.getfixturevalue(stage)
        read = lambda: _once(read_once, f"server:{stage}:" + qualname(c.probe), lambda: c.probe(s))
        judge(c, rack, "server", s.url, evidence, facts, read)
    # the stage's fixture is the item's own (set up before it: the launch, the xdist group)
    marked: Callable[..., None] = pytest.mark.usefixtures(stage)(item)
    return marked


def _per_rank(c: Check[Any]) -> Callable[..., None]:
    if c.sees == "log":
        return _per_rank_logged(c)

    # `serving`: a server that does not serve the configured name is SRV-MODELS' (not run, pointing there)
    def item(dp_rank: int, serving: Any, served: Any, rack: Any, read_once: Any, request: Any, evidence: Any,
             facts: Any) -> None:
        _not_blocked(c, request, read=c.row in read_once)
        # the ranks not known (unranked=True, attached without a rack file): the server's one item
        node = "" if dp_rank == UNRANKED else rank_table(rack)[dp_rank]
        key, where = ("server", served.url) if dp_rank == UNRANKED else (f"{node}/dp{dp_rank}",) * 2

        def read() -> Ranked[Any]:
            return Ranked(dp_rank, node, _once(read_once, c.row, lambda: c.probe(served)))
        judge(c, rack, key, where, evidence, facts, read)
    item.unranked = c.unranked  # type: ignore[attr-defined]  # read by the dp_rank parametrization (fixtures/server.py)
    return item


def _per_rank_logged(c: Check[Any]) -> Callable[..., None]:
    """A "rank" check with sees="log": every node's server log and the boot's verdict read once per
    session (`ServerLogs`), whatever the boot -- neither a dead rank nor a hang keeps it from
    reading what the ranks logged."""
    def item(dp_rank: int, rack: Any, read_once: Any, request: Any, evidence: Any, facts: Any) -> None:
        node = rank_table(rack)[dp_rank]

        def read() -> Ranked[Any]:
            logs = lambda: ServerLogs(rack, request.getfixturevalue("server_logs"), _boot(request))
            return Ranked(dp_rank, node, _once(read_once, c.row, lambda: c.probe(logs())))
        judge(c, rack, f"{node}/dp{dp_rank}", f"{node}/dp{dp_rank}", evidence, facts, read)
    # the server's logs (launching it first) are the item's fixture: the server's xdist group
    marked: Callable[..., None] = pytest.mark.usefixtures("server_logs")(item)
    return marked


# scope -> its item maker; each maker's fixtures parametrize the items (`node` / `gpu`:
# fixtures/nodes.py, `pair`: fixtures/fabric.py, `dp_rank`: fixtures/server.py; a "server" item is
# the one endpoint's)
ITEM_MAKERS: dict[str, Callable[[Check[Any]], Callable[..., None]]] = {
    "gpu": _per_gpu,
    "node": _per_node,
    "rack": _per_rack,
    "rack-gpu": _per_rack_gpu,
    "pair": _per_pair,
    "server": _per_server,
    "rank": _per_rank,
}


def _item(c: Check[Any]) -> Callable[..., None]:
    """The check's pytest function: named for its row, marked with it (markers come from the row),
    parametrized by its scope's fixtures."""
    item = ITEM_MAKERS[c.per](c)
    item.__name__ = item.__qualname__ = c.test_name
    item.__doc__ = f"{c.row}: {row(c.row).title}"
    marked: Callable[..., None] = pytest.mark.row(c.row)(item)
    if c.timeout_s:  # a run bounded by longer than the default (Check.timeout_s)
        marked = pytest.mark.timeout(c.timeout_s)(marked)
    return marked


for _c in registry.checks().values():
    globals()[_c.test_name] = _item(_c)
