"""Every declared check (the registry, rackgate/registry/) as pytest items, made by rackgate's own
collector (pytest's way for tests that are not Python functions: `pytest_collect_file` returns a
`pytest.File` whose `collect()` yields `Item`s). This file is what the collector stands on: pytest
collects it with the rest of rackgate/checks, and a test path `<this file>::PLAT-DRIVER` selects a
row's items (rackgate.ids.path_arg).

A `Row` per check (its id: PLAT-DRIVER), an item per place of the check's scope, named for the
place (rackgate/ids.py):

    node      PLAT-DRIVER::node1          every node of the rack file
    gpu       FAB-STATE::node1-card2      every GPU (numbered as ever; its DRM card discovered)
    rack      PLAT-ATOM-COMMIT::node1     every node, judged across every node read once a session
    rack-gpu  FAB-ACCEL-ID::node1-card2   every GPU, judged across every node read once a session
    pair      FAB-P2P::node1-node2        every ubench07 pair
    rank      SRV-GOLDEN::node3-dp11      every DP rank (named for its node)
    server    SRV-BOOT::server            the one endpoint

Each item runs probe -> judge -> verdict (`judge()`: registry.judge_at, then the row's diagnosis)
on one typed context (`On`, `OnPair`, the server stage, `Ranked`), built in the item's setup from
the fixtures its scope names in its `check` method's signature (pytest sets those up as for any
test: `funcargs`) and its place. The lists come from the rack file, never from what answered: an
unreachable node is an ERROR item of its own, in setup, naming the node and what ssh said. What the
session shares and only some probes read -- the ubench07 rounds, the collective run, the recorded
baseline, the server's boot -- is `Shared`: each fixture set up the first time a probe asks, so a
platform run starts no fabric run and a baseline that cannot be loaded is the asking probe's ERROR.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, cast

import pytest

from rackgate import registry
from rackgate.atom.logs import rank_table
from rackgate.catalogue import row
from rackgate.errors import CouldNotObserve
from rackgate.fabric.pairs import triangles
from rackgate.fixtures import bracket
from rackgate.fixtures.fabric import PairCtx
from rackgate.fixtures.nodes import GpuCtx, NodeCtx, discovered_cards, gpu_map, reachable_host
from rackgate.fixtures.rack import get_rack
from rackgate.fixtures.server import NO_LOGS, blocked
from rackgate.gates.declare import UNRANKED, Across, Check, Finding, Ranked, qualname
from rackgate.ids import DECLARED, SERVER, old_test_name
from rackgate.probes import boot as boot_probe
from rackgate.probes.pair_runs import pair_id
from rackgate.probes.target import On, OnPair, Recorded, ServerLogs
from rackgate.report.verdict import check, fail

NO_NODES = "attached without a rack file (--atom-url): no nodes to read; give --rack to read them"
NO_RANKS = "attached (--atom-url) without a rack file: no nodes, so the DP ranks are not known"
NO_PAIR = "the rack file lists one node: ubench07 needs a peer"


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


def run(c: Check[Any], on: On | OnPair, evidence: Any, facts: Any, read: Callable[[], Any]) -> None:
    """`judge` at a node's, a GPU's or a pair's place (`on`: its rack, key and where)."""
    judge(c, on.rack, on.key, on.where, evidence, facts, read)


def judge_server(c: Check[Any], stage: str, s: Any, rack: Any, read_once: dict[str, Any], evidence: Any,
                 facts: Any) -> None:
    """`judge` at the server (its URL): `s`, the stage of its life the check sees, read by the
    check's probe once per session (the rows that name one probe share its read, its
    could-not-observe too: BENCH-RESULT and BENCH-AGGREGATE, the one benchmark run)."""
    read = lambda: _once(read_once, f"server:{stage}:" + qualname(c.probe), lambda: c.probe(s))
    judge(c, rack, "server", s.url, evidence, facts, read)


def marks(c: Check[Any]) -> list[pytest.MarkDecorator]:
    """A check's item's own marks: its row (the catalogue then gives its -m markers: rackgate/
    fixtures/labels.py) and its timeout where its run is bounded by longer than the default."""
    return [pytest.mark.row(c.row)] + ([pytest.mark.timeout(c.timeout_s)] if c.timeout_s else [])


@pytest.fixture(scope="session")
def read_once() -> dict[str, Any]:
    """row -> what its "rack" check read on every node (or its "rank" check of every rank), and a
    "server" probe's name -> what it read, this session."""
    return {}


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


class Shared:
    """What the session shares with the probes that ask for it, each session fixture set up the
    first time one asks (not before): the ubench07 rounds by tool, the collective run by node, the data check's runs, the
    hardware-error bracket (rackgate/fixtures/bracket.py), the recorded baseline, the server's logs
    and boot."""

    def __init__(self, request: pytest.FixtureRequest):
        self._request = request

    def _fixture(self, name: str) -> Any:
        return self._request.getfixturevalue(name)

    def of_node(self, now: bool = False) -> dict[str, Any]:
        """An `On`'s session fields; `now`: looked up here (before a "rack" check's probes run in
        threads), a baseline that cannot be loaded kept for the probe that asks."""
        config = self._request.config
        recorded = lambda: Recorded(self._fixture("baseline"), bool(config.option.record_baseline))
        shared: dict[str, Any] = {"bracket": lambda: bracket.of_session(config), "recorded": recorded}
        if not now:
            return {"rounds": lambda tool: self._fixture("ubench_runs").get(tool),
                    "collectives": lambda: self._fixture("collective_runs").get(),
                    "datachecks": lambda: self._fixture("datacheck_runs").get(), **shared}
        ubench, coll, data = self._fixture("ubench_runs"), self._fixture("collective_runs"), self._fixture("datacheck_runs")
        return {"rounds": ubench.get, "collectives": coll.get, "datachecks": data.get, **shared,
                "recorded": _here(recorded)}

    def of_logs(self) -> dict[str, Any]:
        """An `On`'s server log and boot (a node check declared with sees="log")."""
        return {"server_logs": lambda: self._fixture("server_logs"), "boot": self.boot}

    def boot(self) -> Any:
        """How the launched server's boot ended (probes/boot.py `Boot`; None attached: not watched)."""
        s = self._fixture("atom_server")
        return boot_probe.boot(s) if s.boot is not None else None

    def cards(self) -> Any:
        return discovered_cards(self._request.config, self._fixture("hosts"))

    def serving(self) -> None:
        """The configured name is served (else NotRun pointing at SRV-MODELS)."""
        self._fixture("serving")


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


@dataclass(frozen=True)
class Place:
    """Where one item looks: its id, the item's name (node1, node1-card2, node1-node2, node3-dp11;
    "server" for the server's one item) and the value its scope reads (a node's name, (node, GPU), a pair,
    a DP rank); `skip`: the rack file says the check does not apply (why)."""
    id: str
    value: Any = None
    skip: str = ""


def places(c: Check[Any], config: pytest.Config) -> list[Place]:
    """The check's places on this run's rack file."""
    rack = get_rack(config)
    if c.per == "server":
        return [Place(SERVER)]
    if c.per == "rank":
        table = rank_table(rack)
        if not table and c.unranked:  # a "rank" check that also judges a server whose ranks are not known
            return [Place(SERVER, UNRANKED)]
        if not table:
            return [Place("no-ranks", skip=NO_RANKS)]
        return [Place(f"{n}-dp{r}", r) for r, n in table.items()]
    if c.per == "pair":
        ps = triangles([n.name for n in rack.nodes])
        return [Place(pair_id(p), p) for p in ps] or [Place("no-pair", skip=NO_PAIR)]
    if not rack.nodes:  # attached without a rack file: its own profile names no node to read
        return [Place("no-nodes", skip=NO_LOGS if c.sees == "log" else NO_NODES)]
    if c.per in ("gpu", "rack-gpu"):
        return [Place(f"{n.name}-card{g}", (n.name, g)) for n in rack.nodes for g in range(rack.gpus_per_node)]
    return [Place(n.name, n.name) for n in rack.nodes]


class DeclaredItem(pytest.Function):
    """One declared check at one place: `check(...)` is the item's test, its signature the
    fixtures its scope reads (set up by pytest before it, in `funcargs`); `at()` builds the place's
    context in setup (an unreachable node is this item's setup ERROR)."""

    def __init__(self, *, declared: Check[Any], place: Place, **kw: Any) -> None:
        self.declared, self.place = declared, place
        super().__init__(callobj=self.check, **kw)  # its id: the row's, then the place (PLAT-DRIVER::node1)
        for m in marks(declared):
            self.add_marker(m)
        # -k of the test name the item had before issue 56 (test_plat_driver) still selects it
        self.extra_keyword_matches.add(old_test_name(declared.row))
        if place.skip:
            self.add_marker(pytest.mark.skip(reason=place.skip))
        self.shared: Shared | None = None
        self.ctx: Any = None

    def check(self) -> None:  # each scope's own, with the fixtures it reads
        raise NotImplementedError

    def at(self, rack: Any) -> Any:
        """The place's context (a node's, a GPU's, a pair's), made in setup; None: the check's own."""
        return None

    def setup(self) -> None:
        super().setup()
        self.shared = Shared(self._request)
        self.ctx = self.at(self.funcargs["rack"])

    def runtest(self) -> None:
        self.check(**{name: self.funcargs[name] for name in self._fixtureinfo.argnames})

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where a person reads the check: its judge (the declaration stands under it), the row's title."""
        judge = self.declared.judge
        code = getattr(judge, "__code__", None)
        where = (Path(code.co_filename), code.co_firstlineno - 1) if code is not None else (self.path, 0)
        return where[0], where[1], f"{self.nodeid}: {row(self.declared.row).title}"

    @property
    def probe(self) -> Callable[[Any], Any]:
        return self.declared.probe

    def judge_on(self, on: On | OnPair, evidence: Any, facts: Any, read: Callable[[], Any]) -> None:
        run(self.declared, on, evidence, facts, read)

    def node_ctx(self, rack: Any, name: str) -> NodeCtx:
        return NodeCtx(name, rack.node(name), reachable_host(self.config, name), rack)

    def sharing(self) -> Shared:
        assert self.shared is not None, "set in setup"
        return self.shared

    def needs_serving(self) -> None:
        """A row that needs SRV-MODELS sends the served name: not run while it is not served."""
        if "SRV-MODELS" in row(self.declared.row).needs:
            self.sharing().serving()


class NodeItem(DeclaredItem):
    def at(self, rack: Any) -> NodeCtx:
        return self.node_ctx(rack, self.place.value)

    def check(self, rack: Any, evidence: Any, facts: Any) -> None:  # type: ignore[override]
        node = self.ctx
        logs = self.sharing().of_logs() if self.declared.sees == "log" else {}
        on = On(rack, node.host, node.name, **self.sharing().of_node(), **logs)
        self.judge_on(on, evidence, facts, lambda: self.probe(on))


class LoggedNodeItem(NodeItem):
    """A node check declared with sees="log": the server's logs (launching it first) are its
    fixture, so it is one of the server's items (its xdist group, rackgate/hooks/server.py)."""

    def check(self, rack: Any, evidence: Any, facts: Any, server_logs: Any) -> None:  # type: ignore[override]
        super().check(rack, evidence, facts)


class GpuItem(DeclaredItem):
    def at(self, rack: Any) -> GpuCtx:
        name, index = self.place.value
        host = reachable_host(self.config, name)
        card = gpu_map(self.config, host).card(index, rack.gpus_per_node)
        return GpuCtx(NodeCtx(name, rack.node(name), host, rack), index, card)

    def check(self, rack: Any, evidence: Any, facts: Any) -> None:  # type: ignore[override]
        gpu = self.ctx
        on = On(rack, gpu.node.host, gpu.node.name, gpu.index, gpu.drm_card, **self.sharing().of_node())
        self.judge_on(on, evidence, facts, lambda: self.probe(on))


class PairItem(DeclaredItem):
    def at(self, rack: Any) -> PairCtx:
        a, b = (self.node_ctx(rack, n) for n in self.place.value)
        return PairCtx(a, b)

    def check(self, rack: Any, evidence: Any, facts: Any) -> None:  # type: ignore[override]
        pair = self.ctx
        shared = self.sharing()
        session = shared.of_node()
        on = OnPair(rack, On(rack, pair.a.host, pair.a.name, **session), On(rack, pair.b.host, pair.b.name, **session),
                    cards=shared.cards)
        probe = cast(Callable[[OnPair], Any], self.probe)  # a "pair" check's probe takes OnPair (declare.per_pair)
        self.judge_on(on, evidence, facts, lambda: probe(on))


class RackItem(DeclaredItem):
    """A node's item judged across the rack: every node's probe read once per session (the first
    item to ask), seen from this item's node (and GPU: RackGpuItem)."""

    def across(self, rack: Any, hosts: Any, read_once: Any, node: str, gpu: int | None = None) -> Callable[[], Across[Any]]:
        c = self.declared

        def read() -> Across[Any]:
            if c.row not in read_once:
                read_once[c.row] = registry.read_across(c, rack, hosts, hosts.missing, self.sharing().of_node(now=True))
            every, unseen = read_once[c.row]
            return Across(node, every, unseen, gpu)
        return read

    def at(self, rack: Any) -> Any:
        return self.node_ctx(rack, self.place.value)

    def check(self, rack: Any, hosts: Any, read_once: Any, evidence: Any, facts: Any) -> None:  # type: ignore[override]
        node = self.ctx
        self.judge_on(On(rack, node.host, node.name), evidence, facts, self.across(rack, hosts, read_once, node.name))


class RackGpuItem(RackItem):
    def at(self, rack: Any) -> GpuCtx:
        return GpuItem.at(cast(GpuItem, self), rack)

    def check(self, rack: Any, hosts: Any, read_once: Any, evidence: Any, facts: Any) -> None:  # type: ignore[override]
        gpu = self.ctx
        on = On(rack, gpu.node.host, gpu.node.name, gpu.index, gpu.drm_card)
        self.judge_on(on, evidence, facts, self.across(rack, hosts, read_once, gpu.node.name, gpu.index))


def _not_blocked(item: DeclaredItem, read: bool = True) -> None:
    """Not run once an earlier row found a dead rank (SRV-ALIVE) or a hang (SRV-DEADLOCK) -- the
    ordering's record, never the row's own items' (`read`: the row has read already; before that,
    its row's record is another row's finding, SRV-LONGCTX's hang recorded for SRV-DEADLOCK too, and
    blocks it as any) --, and a row that needs SRV-MODELS not run while the configured name is not
    served (`serving`)."""
    item.needs_serving()
    cause = blocked(item.config, item.declared.row if read else None)
    if cause is not None:
        raise cause


class ServerItem(DeclaredItem):
    """The one endpoint's item, reading the stage of the server's life its check `sees` (served,
    launched, or only planned; the stage is its fixture: set up before it, the launch, the xdist
    group). Its probe reads once per session: the rows that name one probe share its read
    (BENCH-RESULT and BENCH-AGGREGATE: the one benchmark run), its could-not-observe too. A row that
    needs SRV-MODELS sends the served name: `serving` first (not run, pointing there); a served
    check is not run once a dead rank or a hang is on the ordering's record (`_not_blocked`)."""
    stage = "served"

    def judge_stage(self, s: Any, rack: Any, read_once: Any, evidence: Any, facts: Any) -> None:
        judge_server(self.declared, self.stage, s, rack, read_once, evidence, facts)

    def check(self, rack: Any, read_once: Any, evidence: Any, facts: Any, served: Any) -> None:  # type: ignore[override]
        _not_blocked(self)
        self.judge_stage(served, rack, read_once, evidence, facts)


class LaunchedItem(ServerItem):
    stage = "atom_server"

    def check(self, rack: Any, read_once: Any, evidence: Any, facts: Any, atom_server: Any) -> None:  # type: ignore[override]
        self.needs_serving()
        self.judge_stage(atom_server, rack, read_once, evidence, facts)


class PlannedItem(ServerItem):
    stage = "planned"

    def check(self, rack: Any, read_once: Any, evidence: Any, facts: Any, planned: Any) -> None:  # type: ignore[override]
        self.needs_serving()
        self.judge_stage(planned, rack, read_once, evidence, facts)


class RankItem(DeclaredItem):
    """One DP rank's item (the server's one item, keyed "server", where the ranks are not known and
    the check is declared unranked). `serving`: a server that does not serve the configured name is
    SRV-MODELS' (not run, pointing there)."""

    def check(self, rack: Any, read_once: Any, evidence: Any, facts: Any, serving: Any, served: Any) -> None:  # type: ignore[override]
        c, dp_rank = self.declared, self.place.value
        _not_blocked(self, read=c.row in read_once)
        node = "" if dp_rank == UNRANKED else rank_table(rack)[dp_rank]
        key, where = ("server", served.url) if dp_rank == UNRANKED else (f"{node}/dp{dp_rank}",) * 2

        def read() -> Ranked[Any]:
            return Ranked(dp_rank, node, _once(read_once, c.row, lambda: c.probe(served)))
        judge(c, rack, key, where, evidence, facts, read)


class LoggedRankItem(DeclaredItem):
    """A "rank" check with sees="log": every node's server log and the boot's verdict read once per
    session (`ServerLogs`), whatever the boot -- neither a dead rank nor a hang keeps it from
    reading what the ranks logged. The server's logs are its fixture: the server's xdist group."""

    def check(self, rack: Any, read_once: Any, evidence: Any, facts: Any, server_logs: Any) -> None:  # type: ignore[override]
        c, dp_rank = self.declared, self.place.value
        node = rank_table(rack)[dp_rank]

        def read() -> Ranked[Any]:
            logs = lambda: ServerLogs(rack, server_logs, self.sharing().boot())
            return Ranked(dp_rank, node, _once(read_once, c.row, lambda: c.probe(logs())))
        judge(c, rack, f"{node}/dp{dp_rank}", f"{node}/dp{dp_rank}", evidence, facts, read)


def item_class(c: Check[Any]) -> type[DeclaredItem]:
    """The item class of a check's scope (and what it `sees`)."""
    if c.per == "server":
        return {"": ServerItem, "launched": LaunchedItem, "planned": PlannedItem}[c.sees]
    if c.per == "rank":
        return LoggedRankItem if c.sees == "log" else RankItem
    if c.per == "node":
        return LoggedNodeItem if c.sees == "log" else NodeItem
    return {"gpu": GpuItem, "rack": RackItem, "rack-gpu": RackGpuItem, "pair": PairItem}[c.per]


class Row(pytest.Collector):
    """A declared check's row: its items, one per place (`places`). Its node id is the row's id
    (PLAT-DRIVER), whatever the rootdir, so its items' are PLAT-DRIVER::node1."""

    def __init__(self, *, declared: Check[Any], **kw: Any) -> None:
        self.declared = declared
        super().__init__(nodeid=declared.row, **kw)

    def collect(self) -> list[DeclaredItem]:
        cls = item_class(self.declared)
        return [cls.from_parent(self, name=p.id, declared=self.declared, place=p) for p in places(self.declared, self.config)]


class DeclaredChecks(pytest.File):
    """The collector of the declared checks: a `Row` per check."""

    def collect(self) -> Iterator[Row]:
        for c in registry.checks().values():
            yield Row.from_parent(self, name=c.row, declared=c)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> DeclaredChecks | None:
    if file_path.resolve() == DECLARED:
        return DeclaredChecks.from_parent(parent, path=file_path)
    return None
