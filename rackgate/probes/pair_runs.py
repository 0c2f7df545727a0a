"""What one ubench07 run over a node pair saw, as typed facts (run by rackgate/fabric/ubench07.py,
judged by rackgate/gates/fabric.py): each side's output and how it ended, the kernel log of both
nodes since the run started, and the leftover tool processes found around a round."""
from __future__ import annotations

from dataclasses import dataclass, field

from .dmesg import KmsgLine
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
