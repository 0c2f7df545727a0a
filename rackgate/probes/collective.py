"""The collective probe's output -> facts: per world size the status and each rank's sum, the
NCCL watchdog's timeout lines, and the transports NCCL says it chose (FAB-COLLECTIVE,
FAB-TRANSPORT). The probe itself is collective_probe.py next to this module (shipped, run with
the node's own python inside the container).

NCCL / PyTorch line shapes read here:
  `host:1234:1290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEMMNNVL`
  `host:1234:1290 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [send] via NET/Socket/0`
  `host:1234:1290 [0] NCCL INFO Using network Socket`
  `[rank1]:[E1003 18:37:01.833575187 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception
   (either an error or timeout) detected by watchdog at work: 1, last enqueued NCCL work: 1,
   last completed NCCL work: -1.`
  `... Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, ...)`

Bandwidth (the probe's RGCOLL-BW lines, one per rank: mean seconds per all_reduce of S bytes),
as nccl-tests defines it for all_reduce: algbw = S / t, busbw = algbw x 2(n-1)/n, with t the
slowest rank's mean time (the collective is done when its last rank is) and GB = 1e9 bytes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..lines import ended_lines
from .target import On

PROBE_PATH = Path(__file__).with_name("collective_probe.py")

_RANK = re.compile(r"^RGCOLL (?:scope=(\w+) )?ws=(\d+) rank=(\d+) (.*)$")
_WORLD = re.compile(r"^RGCOLL-WORLD (?:scope=(\w+) )?ws=(\d+) status=(\w+) ranks_ok=(\d+)/(\d+) elapsed=([\d.]+)s")
_BW = re.compile(r"^RGCOLL-BW (?:scope=(\w+) )?ws=(\d+) rank=(\d+) bytes=(\d+) iters=(\d+) warmup=(\d+) "
                 r"mean_s=(\S+)$")
_VIA = re.compile(r"NCCL INFO .*\bvia (\S+)")
_NETWORK = re.compile(r"NCCL INFO Using network (\S+)")
_WATCHDOG = re.compile(r"last completed (?:NCCL )?work: (-?\d+)|Watchdog caught collective operation timeout")


@dataclass
class World:
    ws: int
    status: str = "missing"  # ok / timeout / wrong / error / missing (no summary line)
    ranks_ok: int = 0
    elapsed_s: float | None = None
    results: dict[int, str] = field(default_factory=dict)  # rank -> 'result=3 expect=3' or 'error=...'
    timings: dict[int, tuple[int, float]] = field(default_factory=dict)  # rank -> (bytes, mean s per all_reduce)

    def bandwidth(self) -> "Bandwidth | None":
        """algbw and busbw of the timed all_reduce (None unless every rank of the world printed
        a finite, positive time for the same size)."""
        if len(self.timings) != self.ws or len({b for b, _ in self.timings.values()}) != 1:
            return None
        size = next(iter(self.timings.values()))[0]
        times = [s for _, s in self.timings.values()]
        if size <= 0 or not all(0 < s < float("inf") for s in times):  # NaN fails both comparisons
            return None
        t = max(times)
        alg = size / t / 1e9
        return Bandwidth(self.ws, size, t, alg, alg * 2 * (self.ws - 1) / self.ws)

    def wrong_ranks(self) -> list[str]:
        out = []
        for r, text in sorted(self.results.items()):
            m = re.search(r"result=(\S+) expect=(\S+)", text)
            if not m:
                out.append(f"rank {r}: {text}")
            elif float(m.group(1)) != float(m.group(2)):
                out.append(f"rank {r}: sum {m.group(1)}, expected {m.group(2)}")
        return out


@dataclass(frozen=True)
class Bandwidth:
    ws: int
    size_bytes: int
    time_s: float  # the slowest rank's mean seconds per all_reduce
    algbw_gbps: float
    busbw_gbps: float

    def describe(self) -> str:
        return (f"all_reduce of {self.size_bytes} B over {self.ws} ranks: {self.time_s * 1e6:.1f} us, "
                f"algbw {self.algbw_gbps:.4g} GB/s, busbw {self.busbw_gbps:.4g} GB/s")


@dataclass
class ProbeOutput:
    worlds: dict[int, World]  # this node's own worlds, by size
    transports: list[str]  # every distinct 'via X' (in order of appearance)
    networks: list[str]  # every distinct 'Using network X'
    watchdog: list[str]  # the NCCL watchdog lines
    started: bool  # the probe printed its start line (python ran)
    torch: str = ""  # the torch version the probe imported ('missing (...)' when it could not)
    across: World | None = None  # the world of every node's ranks together

    @property
    def last_completed_minus_one(self) -> bool:
        return any(re.search(r"last completed (?:NCCL )?work: -1\b", w) for w in self.watchdog)


def parse(*texts: str) -> ProbeOutput:
    """The probe's outputs (stdout, stderr: each read to its last ended line) -> facts."""
    worlds: dict[int, World] = {}
    across: dict[int, World] = {}
    transports: list[str] = []
    networks: list[str] = []
    watchdog: list[str] = []
    started, torch = False, ""
    for line in (ln for text in texts for ln in ended_lines(text)):
        s = line.strip()
        if s.startswith("RGCOLL-START"):
            started = True
            m = re.search(r"torch=(.*?) nnodes=", s)
            torch = m.group(1) if m else ""
        m = _WORLD.match(s)
        if m:
            d = across if m.group(1) == "across" else worlds
            w = d.setdefault(int(m.group(2)), World(int(m.group(2))))
            w.status, w.ranks_ok, w.elapsed_s = m.group(3), int(m.group(4)), float(m.group(6))
            continue
        m = _BW.match(s)
        if m:
            d = across if m.group(1) == "across" else worlds
            try:
                took = float(m.group(7))
            except ValueError:
                continue
            d.setdefault(int(m.group(2)), World(int(m.group(2)))).timings[int(m.group(3))] = (int(m.group(4)), took)
            continue
        m = _RANK.match(s)
        if m:
            d = across if m.group(1) == "across" else worlds
            d.setdefault(int(m.group(2)), World(int(m.group(2)))).results[int(m.group(3))] = m.group(4)
            continue
        m = _VIA.search(s)
        if m and m.group(1) not in transports:
            transports.append(m.group(1))
        m = _NETWORK.search(s)
        if m and m.group(1) not in networks:
            networks.append(m.group(1))
        if _WATCHDOG.search(s):
            watchdog.append(s)
    return ProbeOutput(worlds, transports, networks, watchdog, started, torch,
                       next(iter(across.values()), None))


def transport_ok(t: str, healthy: list[str]) -> bool:
    """'P2P/CUMEMMNNVL' or 'P2P/CUMEMMNNVL/read' is the healthy 'P2P/CUMEMMNNVL'; NET/Socket never."""
    return any(t == h or t.startswith(h + "/") for h in healthy)


ACROSS_FLAG = "--nnodes"  # the probe's option that asks for the run across nodes (rackgate/fabric/collective.py)


@dataclass(frozen=True)
class NodeRun:
    """One node's part of the session's collective run (rackgate/fabric/collective.py run_all: every
    node's probe at once, its own worlds, then every node's ranks together)."""
    node: str
    shown: str  # the command, where it ran and what it printed
    rc: int
    last_line: str  # the last line it printed (stderr first), for messages
    out: ProbeOutput
    across_asked: bool = True  # asked for the run across nodes (not while a node was unreachable)


def node_run(on: On) -> NodeRun:
    """FAB-COLLECTIVE, FAB-TRANSPORT: this node's part of the session's collective run (run once,
    the first time one asks); the node's could-not-observe when it could not be run there."""
    got = on.collective()
    if isinstance(got, Exception):
        raise got
    res, out = got
    last = (res.stderr.strip().splitlines() or res.stdout.strip().splitlines() or ["no output"])[-1]
    return NodeRun(on.node, res.evidence(), res.rc, last, out, ACROSS_FLAG in res.command.split())
