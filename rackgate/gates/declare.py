"""A check, declared once: its catalogue row, its scope (what one item covers, what its judge
sees), its probe, its judge and the evidence it attaches. Declarations sit next to their judges
(`rackgate/gates/<area>.py`, a `declare(Check(...))` after the judge); the registry
(rackgate/registry/, the layer above) collects them, and everything else takes them from it: one
collector makes the items (rackgate/checks/declared.py: one per place, named PLAT-SHM[node2]),
the survey runs them on a tray, the fault matrix derives a fault's default case from them and
docs/catalogue.md names each row's probe and judge.

    declare(Check("PLAT-SHM", "node", probe=shm.stale, judge=shm_segments, shows=shm_shown))

- probe: `(On) -> facts` (rackgate/probes/target.py: the node's Host, its container, the rack
  file); it reads, parses and raises CouldNotObserve when it cannot look; it never judges.
- judge: `(facts, rack, where) -> findings`: pure; an empty list is healthy. It reads the rack
  file's expectations from `rack`; `where` names the node/GPU in a could-not-observe it raises.
  A finding that names its place, or is another row's reading, is a `Finding(text, row=, where=, means=, also=)`
  (ACC-BUDGET's share at node3/dp9; its degenerate answers, SRV-SANITY's FAILED; a hang seen by a
  request-sending check, SRV-DEADLOCK's; SRV-SANITY naming the node whose answers are degenerate).
- shows: `(facts, rack) -> [Shown]`: the evidence every item attaches, pass or fail.
- facts: `(facts, where) -> [Fact]` (optional): what `-m regression` compares; `where` is the
  item's key (node2, node2/card3).
- keeps: `(facts, key) -> {set name: value}` (optional): what the item writes into the baseline
  beside its facts when this run records one (`facts.keep`: SRV-GOLDEN's golden set); {} when it
  keeps nothing (not recording: the probe read that through `runs.recorded()` or `on.baseline()`).
- timeout_s (optional): the item's pytest timeout, where the check's run is bounded by longer than
  the run's default (the ACC rows' GSM8K runs: 7200 s, lm-eval's 14400 s; their own bounds end them first).
- applies: `(rack) -> reason` (optional): non-empty when the rack file says the check does not
  apply (the item is SKIPPED with that reason).

Scopes (`per`):
- "node": one item per node; the judge sees that node's facts. With sees="log" the probe also
  reads the node's server log (`on.server_log()`: the server launched first, or attached with
  its log where the rack file says; SKIPPED attached without a rack file): SRV-ENGINE-ARGS.
- "gpu": one item per GPU of a node (`on.gpu`, `on.card`); the judge sees that GPU's facts.
- "rack": one item per node, judged across the rack: the probe reads every node that answers
  (once per session, concurrently) and the judge sees them all, as `Across` (this item's node, every
  node's facts, the nodes that could not be read): a majority across nodes (PLAT-ATOM-COMMIT), one
  identity the whole rack shares (FAB-POD), one rack-wide run judged per node (FAB-COLLECTIVE:
  its probe takes the node's part of the session's collective run, `on.collective()`). It blames
  the node it judges, never the rack. The survey runs the same judge on one tray (`Across` of
  that tray alone).
- "rack-gpu": one item per GPU, judged across the rack: as "rack", the probe reads every node that
  answers once per session, and the judge sees `Across` with `gpu` set to this item's GPU (`mine`
  is its node's facts, which hold every GPU of the node): a number unique rack-wide (FAB-ACCEL-ID),
  a GPU against its node's peers and the recorded baseline (FAB-TRAINING). It blames that GPU.
  The survey judges it across every tray it read.
- "pair": one item per ubench07 pair of nodes (rackgate/fabric/pairs.py: node1-node2, the first
  exports / listens); the probe takes `OnPair` (both nodes, `on.a` / `on.b`) and the judge sees that
  pair's facts. The ubench07 rounds run once per session, the first time a probe asks
  (`on.ubench("p2p")`; rackgate/fixtures/fabric.py ubench_runs); each pair's probe takes its own
  pair's run from them. A fault on one node fails every pair it is in (a bad tray) unless the judge
  reads one direction only (FAB-DMESG: the importer's log).
- "server": one item per endpoint (the session's server: launched from the rack file or attached
  with --atom-url); the probe reads through the server it is handed (rackgate/server_access.py
  `ServerAccess`), the judge sees what it read; `where` is the server's URL. The session's runs are
  handed to the server's probes beside it (rackgate/probes/runs.py `Runs`, `WithRuns.runs`, made by
  the `served` fixture): the recorded baseline, the GSM8K runs of the subject layer above
  (rackgate/gsm8k/session.py: `quick_gate()`, once per session, `under_load()`, `lm_eval()`), as a
  node's probe asks `on.ubench(tool)`.
  `sees` says which stage of the server's life the probe reads: "" (booted and serving the configured name: `served`, SRV-MODELS),
  "launched" (launched or attached, whatever its boot: `atom_server`; SRV-BOOT, SRV-RENDEZVOUS
  read the boot verdict) or "planned" (nothing launched: the launch the rack file plans, or the
  attached server's own command line: `planned`; SRV-LAUNCH-LINT, which runs before the launch).
  A row that needs SRV-MODELS sends
  requests to the served name: its item takes the `server` fixture first (not run while the name is
  not served or a DP rank is known dead). Where the row's evidence is per rank but must also be
  judged where the ranks cannot be told apart (attached without a rack file, a server that refuses
  the rank hint), the judge says the share, naming its ranks where the hint attributes them
  (ACC-BUDGET: "1 of 16 answers ... from node3/dp9").
- "rank": one item per DP rank (`<ROW>::node3-dp9`): the probe asks every rank at once, once per
  session (the per-rank mechanism, rackgate.atom.perrank: the rank hint, the hang rule) and returns
  what each rank answered; the judge sees `Ranked` (this item's rank, every rank's answers) and
  blames that rank (`node3/dp9`), or says "k of n" where the row judges the server. With sees="log"
  the probe reads every node's server log and the boot's verdict instead (`ServerLogs`: the server
  launched, whatever its boot; SRV-KV), once per session, and returns what each rank logged.
  Without a rack file the ranks are not known: the items are SKIPPED, or, declared with
  unranked=True, the row is one item keyed "server" (`<ROW>::server`, `where` the URL) whose
  judge sees `Ranked(UNRANKED, "", {UNRANKED: facts})` and says the share, naming the ranks where the
  hint attributes them (SRV-GOLDEN, as ACC-BUDGET does). A check's `keeps` writes sets into the
  baseline this run records (SRV-GOLDEN's golden set, kept by every rank's item alike).

The item's id is the row's, then its place (`PLAT-SHM::node2`, `<ROW>::node2-card3` per GPU and per
GPU across the rack, `<ROW>::node1-node2` per pair, `<ROW>::node3-dp9` per DP rank,
`<ROW>::server` per server): one declaration per row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Literal, Mapping, Sequence, TypeVar, cast

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes.served import UNRANKED
from ..probes.target import On, OnPair

__all__ = ["UNRANKED", "Across", "Check", "DeclarationError", "Fact", "Finding", "Ranked", "Shown", "across",
           "across_gpus", "declare", "per_pair", "qualname", "ranked", "registered"]

F = TypeVar("F")
Per = Literal["node", "gpu", "rack", "rack-gpu", "pair", "server", "rank"]
PER = ("node", "gpu", "rack", "rack-gpu", "pair", "server", "rank")
Sees = Literal["", "launched", "planned", "log"]
# what a check's probe reads besides its place, by scope ("": the scope's own: a node, the served server)
SEES: dict[str, tuple[str, ...]] = {"server": ("", "launched", "planned"), "node": ("", "log"), "rank": ("", "log")}


class DeclarationError(ValueError):
    pass


@dataclass(frozen=True)
class Shown:
    """One piece of evidence: a name and the text seen (kind "json" for JSON)."""
    name: str
    text: str
    kind: str = "text"


@dataclass(frozen=True)
class Fact:
    """A fact the item records (`-m regression`); `where` defaults to the item's key."""
    name: str
    value: int | float | str | bool
    unit: str = ""
    where: str = ""


class Finding(str):
    """A finding that names its own place, reading or row; a plain str finding is the check's own
    row at the item's place. `where` narrows the item's place (a node or rank inside the server:
    SRV-BOOT [node3/dp9], the share's ranks: ACC-BUDGET [node3/dp9]); `means` is the reading, where
    the row's meaning alone would not say it (SRV-BOOT's fatal line, exit or budget); `row`, where
    what the check read is another row's reading (the degenerate answers ACC-BUDGET read are
    SRV-SANITY's; requests in flight past the hang bound while others came back, SRV-DEADLOCK's):
    the item FAILS under that row's diagnosis, the text naming the asking row; `also`, the other
    rows this finding is the signature of (the ordering records it there too). The item fails on
    its first finding's row, place and reading (rackgate/checks/declared.py `judge`)."""
    row: str
    where: str
    means: str
    also: tuple[str, ...]

    def __new__(cls, text: str, *, row: str = "", where: str = "", means: str = "",
                also: tuple[str, ...] = ()) -> Finding:
        self = super().__new__(cls, text)
        self.row, self.where, self.means, self.also = row, where, means, also
        return self


@dataclass(frozen=True)
class Across(Generic[F]):
    """What a "rack" check's judge sees: the node its item judges, every node's facts (the nodes
    that answered), and why the others could not be read; a "rack-gpu" check's also the GPU
    (index on its node) its item judges."""
    node: str
    facts: Mapping[str, F]
    unseen: Mapping[str, CouldNotObserve]
    gpu: int | None = None

    @property
    def mine(self) -> F:
        """This node's facts (its could-not-observe when it could not be read)."""
        if self.node in self.unseen:
            raise self.unseen[self.node]
        return self.facts[self.node]


@dataclass(frozen=True)
class Ranked(Generic[F]):
    """What a "rank" check's judge sees: the DP rank its item judges (and that rank's node), and
    what every rank answered (a rank missing there: nothing of it came back)."""
    rank: int
    node: str
    ranks: Mapping[int, F]

    @property
    def mine(self) -> F:
        """This rank's answer (could-not-observe when nothing of it came back)."""
        if self.rank not in self.ranks:
            raise CouldNotObserve(f"dp{self.rank}: nothing came back for this rank's request")
        return self.ranks[self.rank]

    @property
    def where(self) -> str:
        return f"{self.node}/dp{self.rank}"


@dataclass(frozen=True)
class Check(Generic[F]):
    row: str
    per: Per
    probe: Callable[[Any], F]  # (On) -> F per node/GPU/rack; (Server) -> F per server, -> {rank: F} per rank
    judge: Callable[[F, Rack, str], list[str]]
    shows: Callable[[F, Rack], Sequence[Shown]]
    facts: Callable[[F, str], Sequence[Fact]] | None = None
    applies: Callable[[Rack], str] | None = None
    sees: Sees = ""  # "server": which stage of the server its probe reads; "node" / "rank": "log", the server logs
    keeps: Callable[[F, str], Mapping[str, dict[str, Any]]] | None = None  # sets kept in the baseline (recording)
    unranked: bool = False  # "rank": also one item (keyed "server") for a server whose ranks are not known
    timeout_s: int = 0  # the item's pytest timeout where its run is longer than the default (0: the default)



def across(row: str, probe: Callable[[On], F], judge: Callable[[Across[F], Rack, str], list[str]],
           shows: Callable[[Across[F], Rack], Sequence[Shown]],
           facts: Callable[[Across[F], str], Sequence[Fact]] | None = None,
           applies: Callable[[Rack], str] | None = None) -> Check[Any]:
    """A "rack" check: `probe` reads one node; `judge`, `shows` and `facts` see `Across` the rack.
        declare(across("PLAT-ATOM-COMMIT", probe=atom_commit.commit, judge=commit_agrees, shows=commit_shown))"""
    return Check[Any](row, "rack", probe, judge, shows, facts, applies)  # the judge sees Across[F], not F


def across_gpus(row: str, probe: Callable[[On], F], judge: Callable[[Across[F], Rack, str], list[str]],
                shows: Callable[[Across[F], Rack], Sequence[Shown]],
                facts: Callable[[Across[F], str], Sequence[Fact]] | None = None,
                applies: Callable[[Rack], str] | None = None) -> Check[Any]:
    """A "rack-gpu" check: `probe` reads one node (every GPU of it); `judge`, `shows` and `facts`
    see `Across` the rack with `gpu` set to the item's GPU.
        declare(across_gpus("FAB-ACCEL-ID", probe=fabric_fields.numbered, judge=accel_item, shows=accel_shown))"""
    return Check[Any](row, "rack-gpu", probe, judge, shows, facts, applies)  # the judge sees Across[F]


def ranked(row: str, probe: Callable[[Any], Mapping[int, F]], judge: Callable[[Ranked[F], Rack, str], list[str]],
           shows: Callable[[Ranked[F], Rack], Sequence[Shown]],
           facts: Callable[[Ranked[F], str], Sequence[Fact]] | None = None,
           applies: Callable[[Rack], str] | None = None, sees: Sees = "",
           keeps: Callable[[Ranked[F], str], Mapping[str, dict[str, Any]]] | None = None,
           unranked: bool = False) -> Check[Any]:
    """A "rank" check: `probe` asks every DP rank through the server object and returns
    {rank: what it answered}; `judge`, `shows` and `facts` see `Ranked` (one rank, every rank's).
    sees="log": `probe` reads every node's server log instead (`ServerLogs`, whatever the boot).
    unranked=True: where the ranks are not known (attached without a rack file) the row is one item,
    `<ROW>::server`, keyed "server" with `where` the URL; its probe answers {UNRANKED: facts} and
    its judge sees Ranked(UNRANKED, "", ...) and says the share (SRV-GOLDEN).
        declare(ranked("SRV-ALIVE", probe=served.alive, judge=rank_answers, shows=alive_shown))"""
    return Check[Any](row, "rank", probe, judge, shows, facts, applies, sees, keeps, unranked)  # the judge sees Ranked[F]


def per_pair(row: str, probe: Callable[[OnPair], F], judge: Callable[[F, Rack, str], list[str]],
             shows: Callable[[F, Rack], Sequence[Shown]], facts: Callable[[F, str], Sequence[Fact]] | None = None,
             applies: Callable[[Rack], str] | None = None) -> Check[Any]:
    """A "pair" check: `probe` reads one ubench07 pair (OnPair); `judge` sees that pair's facts.
        declare(per_pair("FAB-P2P", probe=pair_runs.p2p, judge=p2p_item, shows=sides_shown))"""
    return Check[Any](row, "pair", cast(Callable[[On], Any], probe), judge, shows, facts, applies)


_CHECKS: dict[str, Check[Any]] = {}  # facts differ per check


def declare(*checks: Check[Any]) -> None:
    for c in checks:
        if c.row in _CHECKS:
            raise DeclarationError(f"row {c.row} is declared twice ({_where(_CHECKS[c.row])}, {_where(c)})")
        if c.per not in PER:
            raise DeclarationError(f"row {c.row}: per must be one of {', '.join(PER)}, not {c.per!r}")
        if c.sees not in SEES.get(c.per, ("",)):
            raise DeclarationError(f"row {c.row}: a {c.per!r} check sees {' or '.join(map(repr, SEES.get(c.per, ('',))))},"
                                   f" not {c.sees!r}")
        _CHECKS[c.row] = c


def _where(c: Check[Any]) -> str:
    return getattr(c.judge, "__module__", "?")


def registered() -> dict[str, Check[Any]]:
    """The checks declared so far, by row id. Consumers take every check from the registry
    (rackgate/registry: `checks()` imports every module of rackgate/gates/ first)."""
    return dict(_CHECKS)


def qualname(fn: Callable[..., object]) -> str:
    """`probes.shm.stale`: a probe's or judge's name as docs/catalogue.md shows it."""
    mod = getattr(fn, "__module__", "") or ""
    return f"{mod.removeprefix('rackgate.')}.{getattr(fn, '__qualname__', repr(fn))}"
