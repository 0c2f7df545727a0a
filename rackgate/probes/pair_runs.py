"""What one ubench07 run over a node pair saw, as typed facts (run by rackgate/fabric/ubench07.py,
judged by rackgate/gates/fabric.py): each side's output and how it ended, the kernel log of both
nodes since the run started, and the leftover tool processes found around a round. The probes at
the end take one pair's (or one node's) part of the session's rounds for the declared FAB checks."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol

from .dmesg import KmsgLine
from .drm import GpuMap
from .target import On, OnPair
from .ubench import UbenchProc

Pair = tuple[str, str]


def pair_id(p: Pair) -> str:
    return f"{p[0]}-{p[1]}"


@dataclass
class Side:
    node: str
    role: str  # exporter / importer / listener / connector
    command: str
    exe: str = ""  # argv[0] of the command, as sent
    output: str = ""
    exited: bool = False  # ended by itself
    ended_by_suite: bool = False  # still sitting at the bound: ended by PID
    ready: bool | None = None  # exporter/listener only: its output said it waits for the peer
    pid: int | None = None


@dataclass
class PairRun:
    tool: str  # p2p / bw
    pair: Pair
    server: Side
    client: Side | None
    seconds: float = 0.0
    dmesg: dict[str, list[KmsgLine]] = field(default_factory=dict)
    error: str = ""  # the suite could not run it (transport), not a verdict

    @property
    def id(self) -> str:
        return pair_id(self.pair)


@dataclass
class LeftoverScan:
    node: str
    when: str
    found: list[UbenchProc]
    ours: set[int]
    error: str = ""
    # what rackgate tried to start on this node when the start's reply was lost (the process may
    # run under a PID it never learnt): a process that matches one is maybe ours, not foreign
    unsure: list[list[str]] = field(default_factory=list)
    unended: set[int] = field(default_factory=set)  # our PIDs that no signal could be sent to

    def maybe_ours(self, p: UbenchProc) -> bool:
        words = p.args.split()
        return any(words and words[0].rsplit("/", 1)[-1] == argv[0].rsplit("/", 1)[-1]
                   and all(a in words[1:] for a in argv[1:]) for argv in self.unsure if argv)

    @property
    def foreign(self) -> list[UbenchProc]:
        return [p for p in self.found
                if p.pid not in self.ours and p.pgid not in self.ours and not self.maybe_ours(p)]

    @property
    def unsure_found(self) -> list[UbenchProc]:
        return [p for p in self.found if p.pid not in self.ours and p.pgid not in self.ours and self.maybe_ours(p)]


class Rounds(Protocol):
    """One tool's ubench07 rounds over every pair of the rack, run once per session
    (rackgate/fabric/ubench07.py Ubench07): what a "pair" check's probe takes its pair's run from."""
    tool: str
    runs: dict[str, PairRun]
    scans: list[LeftoverScan]
    ended: list[str]  # our own processes we had to end

    def scans_of(self, node: str) -> list[LeftoverScan]: ...


TOOLS = ("p2p", "bw")


@dataclass(frozen=True)
class Measured:
    """One pair's run and every pair's run of the same tool this session (FAB-BW compares them)."""
    run: PairRun
    every: Mapping[str, PairRun]


@dataclass(frozen=True)
class PairLogs:
    """A pair's runs of both tools (their kernel logs) and the rack's discovered cards (to name GPUs)."""
    runs: list[PairRun]
    cards: Mapping[str, GpuMap]


@dataclass(frozen=True)
class NodeScans:
    """The leftover scans on one node around every round of both tools, and the processes of ours
    the suite had to end (FAB-LEFTOVER)."""
    node: str
    scans: list[LeftoverScan]
    ended: Mapping[str, list[str]]  # tool -> ours ended at their bound


def _pair_run(on: OnPair, tool: str) -> PairRun:
    runs = on.ubench(tool).runs
    if on.id not in runs:  # a pair with an unreachable node is not run (its item ERRORs on the node)
        raise RuntimeError(f"{on.where}: no ubench07 {tool} run of this pair in the session's rounds")
    return runs[on.id]


def p2p(on: OnPair) -> PairRun:
    """FAB-P2P: the pair's ualoe_p2p run."""
    return _pair_run(on, "p2p")


def bw(on: OnPair) -> Measured:
    """FAB-BW: the pair's ualoe_bw run, with every pair's of this session."""
    return Measured(_pair_run(on, "bw"), on.ubench("bw").runs)


def logs(on: OnPair) -> PairLogs:
    """FAB-DMESG: both tools' runs of the pair (the kernel log of both nodes while each ran)."""
    return PairLogs([_pair_run(on, t) for t in TOOLS], on.gpu_names())


def scans(on: On) -> NodeScans:
    """FAB-LEFTOVER: the ps scans on the node around every round of both tools."""
    got = {t: on.ubench(t) for t in TOOLS}
    return NodeScans(on.node, [s for r in got.values() for s in r.scans_of(on.node)],
                     {t: r.ended for t, r in got.items() if r.ended})
