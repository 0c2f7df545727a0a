"""Where one item of a declared check looks (rackgate/gates/declare.py): a node, one GPU of it, or
a ubench07 pair of nodes (OnPair).

The pytest items build it from their `node` / `gpu` / `pair` fixtures; a probe reads through
`host` (or `container()`), and names what it read with `where`. What the session shares comes with
it, each looked up the first time a probe asks: the ubench07 rounds (`ubench(tool)`), the collective
run (`collective()`), the hardware-error bracket's rises on this node (`charged(stages)`,
rackgate/fixtures/bracket.py), the recorded baseline (`baseline()`) and,
for a check declared with sees="log", the node's server log (`server_log()`) and how the server's
boot ended (`server_boot()`). A "rank" check declared with sees="log" reads `ServerLogs` instead:
every node's server log and the boot, whatever the boot's verdict.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from ..access import NodeAccess
from ..config.model import Rack
from ..server_access import ServerLog
from .drm import Card, where

if TYPE_CHECKING:  # pair_runs -> dmesg -> target
    from ..access import Result
    from .boot import Boot
    from .collective import ProbeOutput
    from .datacheck import Outcome
    from .drm import GpuMap
    from .pair_runs import Rounds
    from .ras import Rise, Snapshot

    Collective = tuple[Result, ProbeOutput] | Exception  # one node's part of the collective run, or why not


class StageCounters(Protocol):
    """What a probe reads of the session's hardware-error bracket (rackgate/fixtures/bracket.py
    `Bracket`): stage -> the counter rises charged to it on `node` (could-not-observe when none of
    `stages` ran, or a snapshot of the node could not be read), and the node's latest snapshot."""

    def charged(self, stages: tuple[str, ...], node: str) -> dict[str, list[Rise]]: ...

    def latest(self, node: str) -> Snapshot | None: ...


@dataclass(frozen=True)
class ServerLogs:
    """What a "rank" check declared with sees="log" reads: every node's server log (by node) and
    how the boot ended (None: attached, not watched), whatever that was -- the log checks judge a
    boot that failed too."""
    rack: Rack
    logs: Mapping[str, ServerLog]
    boot: Boot | None


class _Value(Protocol):
    @property
    def value(self) -> object: ...


class BaselineView(Protocol):
    """What a judge reads of a recorded baseline (rackgate.baseline.Baseline, a layer above)."""

    @property
    def path(self) -> str: ...                       # the baseline file, as the user named it

    @property
    def sets(self) -> Mapping[str, dict[str, Any]]: ...   # the sets recorded beside the facts (SRV-GOLDEN's)

    def get(self, name: str, where: str = "") -> _Value | None: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Recorded:
    """The session's recorded baseline as a check compares with it: `baseline` (None when none was
    recorded), or `recording` (this run records one: --record-baseline; nothing to compare)."""
    baseline: BaselineView | None
    recording: bool = False


@dataclass(frozen=True)
class On:
    rack: Rack
    host: NodeAccess
    node: str
    gpu: int | None = None  # GPU g of the node (PCI order), for a per-GPU check
    card: Card | None = None  # its DRM card, discovered
    rounds: Callable[[str], Rounds] | None = None  # the session's ubench07 rounds by tool (p2p, bw)
    collectives: Callable[[], Mapping[str, Collective]] | None = None  # the session's collective run, by node
    datachecks: Callable[[], Outcome] | None = None  # the session's data check (FAB-DATACHECK), rack-wide
    bracket: Callable[[], StageCounters] | None = None  # the session's hardware-error bracket
    recorded: Callable[[], Recorded] | None = None  # the session's recorded baseline
    server_logs: Callable[[], Mapping[str, ServerLog]] | None = None  # the session's server logs, by node
    boot: Callable[[], Boot | None] | None = None  # how the server's boot ended (sees="log")

    def container(self, env: dict[str, str] | None = None) -> NodeAccess:
        """Where the engine runs on this node: its container, or the node itself (container = "")."""
        return self.host.container(self.rack.container, self.rack.node(self.node).container_sysroot, env)

    @property
    def where(self) -> str:
        """For messages: node2, or node2/gpu3 (card4, 0000:75:00.0)."""
        if self.gpu is None or self.card is None:
            return self.node
        return where(self.node, self.gpu, self.card.card, self.card.bdf)

    @property
    def key(self) -> str:
        """For facts and baselines: node2, or the GPU-numbered node2/card3 (stable across renumbered cards)."""
        return self.node if self.gpu is None else f"{self.node}/card{self.gpu}"

    def ubench(self, tool: str) -> Rounds:
        """The session's ubench07 rounds of `tool` over every pair (run the first time one asks)."""
        if self.rounds is None:
            raise RuntimeError(f"{self.node}: this item was made without the session's ubench07 rounds")
        return self.rounds(tool)

    def collective(self) -> Collective:
        """This node's part of the session's collective run (run the first time one asks)."""
        if self.collectives is None:
            raise RuntimeError(f"{self.node}: this item was made without the session's collective run")
        return self.collectives()[self.node]

    def datacheck(self) -> Outcome:
        """The session's data check over every GPU of the rack, bisected when it failed (run the first
        time one asks)."""
        if self.datachecks is None:
            raise RuntimeError(f"{self.node}: this item was made without the session's data check")
        return self.datachecks()

    def charged(self, stages: tuple[str, ...]) -> dict[str, list[Rise]]:
        """stage -> the hardware error counters that rose on this node while it ran (the bracket)."""
        if self.bracket is None:
            raise RuntimeError(f"{self.node}: this item was made without the session's hardware-error bracket")
        return self.bracket().charged(stages, self.node)

    def baseline(self) -> Recorded:
        """The session's recorded baseline (or that this run records one)."""
        if self.recorded is None:
            raise RuntimeError(f"{self.node}: this item was made without the session's recorded baseline")
        return self.recorded()

    def server_log(self) -> ServerLog:
        """This node's server log (a check declared with sees="log": the server launched first)."""
        if self.server_logs is None:
            raise RuntimeError(f"{self.node}: this item was made without the session's server logs")
        return self.server_logs()[self.node]

    def server_boot(self) -> Boot | None:
        """How the server's boot ended (None: attached, not watched; a check declared with sees="log")."""
        if self.boot is None:
            raise RuntimeError(f"{self.node}: this item was made without the server's boot")
        return self.boot()


@dataclass(frozen=True)
class OnPair:
    """Where one item of a "pair" check looks: a ubench07 pair of nodes (rackgate/fabric/pairs.py),
    `a` exports / listens, `b` imports / connects."""
    rack: Rack
    a: On
    b: On
    cards: Callable[[], Mapping[str, GpuMap]] | None = None  # every node's discovered cards (to name GPUs)

    @property
    def id(self) -> str:
        """The pair's id and item parameter: node1-node2."""
        return f"{self.a.node}-{self.b.node}"

    @property
    def where(self) -> str:
        """For messages: node1<->node2."""
        return f"{self.a.node}<->{self.b.node}"

    @property
    def key(self) -> str:
        """For facts and baselines: the pair's id."""
        return self.id

    def ubench(self, tool: str) -> Rounds:
        return self.a.ubench(tool)

    def gpu_names(self) -> Mapping[str, GpuMap]:
        """{node: its discovered cards} of the nodes whose cards could be read (names GPUs in messages)."""
        return self.cards() if self.cards is not None else {}
