"""Log scan at scale: the boot watcher's per-line work and the log parsers' grep, on a generated
multi-GB ATOM server log, in constant memory.

    python3 benchmarks/log_scan.py [--size-gb 2] [--dir /tmp]

Generates a log in ATOM's formats (ATOM_LOG_MORE headers and messages from 16 DP ranks, tqdm
progress with carriage returns, coloured lines, `Memory budget:`, `_sync_dp_state failed` and a
fatal signature near the end), then measures:
- watcher: every line through rackgate.atom.logformat.Parser and signatures.Judge, as the boot
  watcher does for each line `tail -F` hands it (read here in 1 MiB blocks);
- grep: rackgate.atom.logs.NodeLog.grep (grep -a -n -B1 on the node, bounded by MAX_MATCHES) and
  the records it returns, through the local transport.
Prints MB/s and the peak RSS of this process (ru_maxrss) and of the grep child. The file is
removed afterwards. Figures: docs/performance.md.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rackgate.atom import logfacts, signatures
from rackgate.atom.logformat import Parser
from rackgate.atom.logs import NodeLog
from rackgate.transport.host import Host
from rackgate.transport.runners import LocalRunner


def _block(seed: int) -> str:
    out = []
    for i in range(200):
        r = (seed + i) % 16
        out.append(f"[atom INFO] 2026-09-24 13:{i % 60:02d}:{(seed + i) % 60:02d}.{i % 10} - EngineCore-DP{r}:{4200 + r}"
                   f" - /app/ATOM/atom/model_engine/scheduler.py:1502 - log_stats")
        out.append(f"Engine {r:03d}: prompt throughput: {1000 + i}.0 tok/s, Running: {i % 64}, KV usage: {i % 97}.{i % 10}%")
        if i % 20 == 0:
            out.append(f"Loading safetensors checkpoint shards: {i % 96}/96\rLoading safetensors checkpoint shards: "
                       f"{i % 96 + 1}/96\r")
        if i % 50 == 0:
            out.append(f"\x1b[32m[atom 13:{i % 60:02d}:00]\x1b[0m Engine Core: step {seed + i} done")
    return "\n".join(out) + "\n"


TAIL = ("[atom WARNING] 2026-09-24 13:38:47.1 - EngineCore-DP3:4203 - /app/ATOM/atom/model_engine/engine_core.py:711"
        " - _sync_dp_state\nEngine Core: _sync_dp_state failed: Timed out waiting 1800000ms\n"
        "Memory budget: total_gpu=432.00GB, free=431.40GB, utilization=0.9, budget=388.80GB, peak_torch=194.67GB, "
        "non_torch=24.94GB, cudagraph_est=1.18GB, safety=8.64GB, available_for_kv=159.37GB, block_bytes=1179648, "
        "num_kvcache_blocks=145063\n\x1b[1;31mMemory access fault\x1b[0m by GPU node-2 (Agent handle: 0x5a)\n")


def generate(path: Path, size: int) -> int:
    blocks = [_block(s).encode() for s in range(8)]
    written = 0
    with open(path, "wb", buffering=1 << 20) as fh:
        i = 0
        while written < size:
            b = blocks[i % len(blocks)]
            fh.write(b)
            written += len(b)
            i += 1
        fh.write(TAIL.encode())
        written += len(TAIL)
    return written


def watcher_pass(path: Path) -> tuple[float, int, int, str]:
    """Every line through the parser and the fatal match, as the watcher does. Returns (seconds,
    lines, records, the fatal signature found)."""
    p = Parser()
    judge = signatures.Judge()
    lines = recs = 0
    fatal = ""
    t0 = time.perf_counter()
    c0 = time.process_time()
    with open(path, "rb") as fh:
        rest = b""
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            chunk = rest + chunk
            cut = chunk.rfind(b"\n") + 1
            rest = chunk[cut:]
            for raw in chunk[:cut].decode("utf-8", "replace").split("\n")[:-1]:
                lines += 1
                rec = p.feed(raw)
                if rec is None:
                    continue
                recs += 1
                f = judge.feed(rec)
                if f is not None:
                    fatal = f.signature
    last = judge.flush()
    fatal = last.signature if last is not None else fatal
    return time.perf_counter() - t0, time.process_time() - c0, lines, recs, fatal


def grep_pass(path: Path) -> tuple[float, int, int]:
    host = Host("local", LocalRunner("local"))
    log = NodeLog("local", host, str(path), range(0, 16))
    t0 = time.perf_counter()
    got = log.grep("_sync_dp_state failed", "Memory budget:")
    budgets = [logfacts.memory_budget(r.text) for r in got]
    return time.perf_counter() - t0, len(got), sum(1 for b in budgets if b)


def _rss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    a = ap.parse_args()
    path = Path(a.dir) / f"rackgate-log-scan-{os.getpid()}.log"
    try:
        t = time.perf_counter()
        size = generate(path, int(a.size_gb * (1 << 30)))
        mb = size / 1e6
        print(f"generated {mb:,.0f} MB in {time.perf_counter() - t:.1f}s: {path}")
        rss0 = _rss_mb(resource.RUSAGE_SELF)
        secs, cpu, lines, recs, fatal = watcher_pass(path)
        print(f"watcher: {lines:,} lines, {recs:,} records, fatal={fatal!r}: {secs:.1f}s = {mb / secs:,.1f} MB/s "
              f"({cpu:.1f} CPU s = {mb / cpu:,.1f} MB per CPU second); "
              f"peak RSS {_rss_mb(resource.RUSAGE_SELF):.0f} MB (before the pass {rss0:.0f} MB)")
        secs, n, budgets = grep_pass(path)
        print(f"grep:    {n} records ({budgets} Memory budget): {secs:.1f}s = {mb / secs:,.1f} MB/s; peak RSS "
              f"{_rss_mb(resource.RUSAGE_SELF):.0f} MB here, {_rss_mb(resource.RUSAGE_CHILDREN):.0f} MB in grep")
        print(f"cpus: {os.cpu_count()}, load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        if not a.keep:
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
