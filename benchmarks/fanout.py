"""The survey's wall time at 1, 4, 18 and 64 trays, with 50 ms added to every ssh round trip.

    python3 benchmarks/fanout.py [--sizes 1 4 18 64] [--latency-ms 50] [--jobs 64] [--repeat 1]

Builds the healthy simulated rack at each size (racks/sim18.toml's values, no faults), wraps each
node's runner so every command costs one more round trip of --latency-ms (what a ControlMaster
connection costs per command on a real rack; the sim's commands otherwise run locally), and times
`rackgate.survey.run.survey` over the whole rack: one Host per node for all its checks, at most
--jobs trays in flight. Prints a table; figures go in docs/performance.md.

--mode replay separates the fan-out from the sim's own CPU (on this machine every simulated
node's commands run on the same few cores, as they never would on a rack): the survey first runs
untimed against the sim, recording each command's result per node; the timed run then replays
them, each round trip costing --latency-ms plus one real local process start (what an ssh client
over a ControlMaster costs this machine), so the figure is the fan-out's own scaling.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rackgate import config
from rackgate.sim.rack import build, override
from rackgate.survey import run

RACK = Path(__file__).resolve().parent.parent / "racks" / "sim18.toml"


class Delayed:
    """A runner that adds one network round trip to every command (and counts them)."""

    def __init__(self, below, latency_s: float, counter: dict):
        self.below, self.latency_s, self.counter = below, latency_s, counter
        self.kind, self.node = below.kind, below.node

    def run(self, cmd, timeout, stdin=None):
        with _LOCK:
            self.counter[self.node] = self.counter.get(self.node, 0) + 1
        time.sleep(self.latency_s)
        return self.below.run(cmd, timeout, stdin)


_LOCK = threading.Lock()


class Recording:
    def __init__(self, below, tape: dict):
        self.below, self.tape, self.kind, self.node = below, tape, below.kind, below.node

    def run(self, cmd, timeout, stdin=None):
        res = self.below.run(cmd, timeout, stdin)
        with _LOCK:
            self.tape.setdefault((self.node, cmd), []).append(res)
        return res


class Replay:
    """Answers from the tape: one local process start (ssh's own cost) and one round trip."""

    def __init__(self, node: str, kind: str, tape: dict, latency_s: float, counter: dict):
        self.node, self.kind, self.tape, self.latency_s, self.counter = node, kind, tape, latency_s, counter
        self.used: dict = {}

    def run(self, cmd, timeout, stdin=None):
        import subprocess
        with _LOCK:
            self.counter[self.node] = self.counter.get(self.node, 0) + 1
            i = self.used.get(cmd, 0)
            self.used[cmd] = i + 1
        subprocess.run(["true"], check=False)
        time.sleep(self.latency_s)
        got = self.tape[(self.node, cmd)]
        return got[min(i, len(got) - 1)]


def one(n: int, latency_s: float, jobs: int, mode: str = "sim") -> tuple[float, float, int]:
    base = config.load(RACK)
    rack = override(override(base, "sim.nodes", n), "sim.faults", [])
    sim = build(rack)
    try:
        hosts = run.hosts_for(sim.rack)
        counter: dict = {}
        if mode == "replay":
            tape: dict = {}
            for h in hosts.values():
                h.runner = Recording(h.runner, tape)
            run.survey(sim.rack, jobs=jobs, hosts=hosts)
            hosts = run.hosts_for(sim.rack)
            for h in hosts.values():
                h.runner = Replay(h.name, h.runner.kind, tape, latency_s, counter)
        else:
            for h in hosts.values():
                h.runner = Delayed(h.runner, latency_s, counter)
        t0 = time.monotonic()
        reports = run.survey(sim.rack, jobs=jobs, hosts=hosts)
        wall = time.monotonic() - t0
        assert all(r.usable for r in reports), [r.problems() for r in reports if not r.usable]
        per_tray = max(r.seconds for r in reports)
        return wall, per_tray, max(counter.values())
    finally:
        sim.stop()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 18, 64])
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--jobs", type=int, default=run.DEFAULT_JOBS)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--mode", choices=("sim", "replay"), default="sim")
    a = ap.parse_args()
    print(f"survey fan-out ({a.mode}): +{a.latency_ms:g} ms per round trip, --jobs {a.jobs}, {os.cpu_count()} CPUs")
    print(f"{'trays':>5}  {'wall s':>7}  {'x 1-tray':>8}  {'slowest tray s':>14}  {'round trips/tray':>16}")
    first = None
    for n in a.sizes:
        best = min((one(n, a.latency_ms / 1000, a.jobs, a.mode) for _ in range(a.repeat)), key=lambda t: t[0])
        wall, per_tray, trips = best
        first = first or wall
        print(f"{n:>5}  {wall:>7.2f}  {wall / first:>8.2f}  {per_tray:>14.2f}  {trips:>16}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
