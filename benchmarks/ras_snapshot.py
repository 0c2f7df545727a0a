"""One snapshot of every GPU error counter of the 4-node sim rack (the bracket's unit of work).

    python3 benchmarks/ras_snapshot.py [--repeat 20]

Builds the healthy shipped sim rack and times `rackgate.probes.ras.snapshot` on every node at once
(one command per node, fanned out as rackgate/fixtures/bracket.py does). Prints the median and the
worst of --repeat rounds; the figure goes in docs/performance.md.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rackgate import config, simrack
from rackgate.probes import ras
from rackgate.transport import fanout, host_for


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    sim = simrack.build(config.load(simrack.shipped_rack()), [])
    try:
        rack = sim.rack
        hosts = [host_for(n, rack) for n in rack.nodes]
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            got = fanout(hosts, lambda h: ras.snapshot(h, rack.gpus_per_node))
            times.append(time.perf_counter() - t)
            bad = [g for g in got if isinstance(g, Exception)]
            if bad:
                raise SystemExit(f"snapshot failed: {bad[0]}")
        gpus = sum(len(g.gpus) for g in got if isinstance(g, ras.Snapshot))
        print(f"{len(hosts)} nodes, {gpus} GPUs, one command per node: median {statistics.median(times) * 1000:.0f} ms, "
              f"worst {max(times) * 1000:.0f} ms over {a.repeat} snapshots")
    finally:
        sim.stop()


if __name__ == "__main__":
    main()
