#!/usr/bin/env python3
"""A minimal torch.distributed all_reduce, run inside the container with the node's own python.

Shipped with rackgate and run unchanged on any node (the suite feeds it on stdin:
`python3 - ARGS < collective_probe.py`, so nothing is written on the node). The parent imports
torch once (which initialises no GPU) and forks one child per rank; only the ranks touch a
device, so the parent can always end them.

    this node:         python3 collective_probe.py --world-sizes 1,2,4
    then across nodes: python3 collective_probe.py --world-sizes 1,2,4 --nnodes 4 --node-rank I \
                           --ranks-per-node 4 --master-addr <head data-plane IP>   (every node at once)

Rank r contributes r+1; after all_reduce(SUM) every rank must hold w(w+1)/2. Every world has two
bounds: the rendezvous (--join-timeout, or the process-group timeout when 0), then, counted from
the moment the last rank has joined (each rank tells the parent through a pipe), the process
group's timeout plus a grace. Ranks still running then are killed (SIGKILL, by PID: they are
this process's children) and the world is reported as a timeout. So a slow start (a loaded
machine, ranks of other nodes starting later) never eats the collective's own timeout.
With NCCL_DEBUG=INFO in the environment, NCCL's own lines (the transport, FAB-TRANSPORT) pass
through on stdout. Output lines for the suite start with RGCOLL.

Bandwidth (--bw-bytes N, this node's own worlds of 2+ ranks): after the correctness check, each
rank all_reduces a float32 tensor of N bytes --bw-warmup times untimed, then --bw-iters times
timed (device synchronised before and after) and prints its mean seconds per all_reduce
(RGCOLL-BW). The suite turns the slowest rank's time into algbw and busbw as nccl-tests define
them (rackgate/probes/collective.py).
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import time
from types import ModuleType


def _say(line: str) -> None:
    """One line in one write(2): ranks share stdout, and a pipe keeps a small write whole."""
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())


def _rank(scope: str, ws: int, rank: int, local_rank: int, addr: str, port: int, backend: str, timeout_s: float,
          join_s: float, joined_fd: int, bw: tuple[int, int, int] = (0, 0, 0)) -> None:
    """One rank (a forked child). Writes one byte to joined_fd once the process group is up;
    prints one RGCOLL line, exits 0 on a correct sum."""
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(ws), "LOCAL_RANK": str(local_rank),
                       "MASTER_ADDR": addr, "MASTER_PORT": str(port)})
    try:
        import datetime

        import torch
        import torch.distributed as dist
        if backend == "auto":
            backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
            device = f"cuda:{local_rank}"
        else:
            device = "cpu"
        # Rendezvous first, with its own (longer) bound: ranks on other nodes may start later.
        # Then the collective gets the process-group timeout, as in the runbook's ncclmin.py.
        store = dist.TCPStore(addr, port, ws, rank == 0, timeout=datetime.timedelta(seconds=join_s),
                              wait_for_workers=True)
        dist.init_process_group(backend, store=store, rank=rank, world_size=ws,
                                timeout=datetime.timedelta(seconds=timeout_s))
        os.write(joined_fd, b"j")
        t = torch.ones(1024, device=device) * (rank + 1)
        dist.all_reduce(t)
        if backend == "nccl":
            torch.cuda.synchronize()
        got, expect = t[0].item(), ws * (ws + 1) // 2
        _say(f"RGCOLL scope={scope} ws={ws} rank={rank} backend={backend} device={device} result={got:g} "
             f"expect={expect}")
        nbytes, warmup, iters = bw
        if nbytes and ws > 1 and got == expect:
            _bandwidth(torch, dist, scope, ws, rank, device, backend == "nccl", nbytes, warmup, iters)
        dist.destroy_process_group()
        os._exit(0 if got == expect else 3)
    except BaseException as e:  # noqa: BLE001 - report and exit, whatever it was
        msg = " ".join(f"{type(e).__name__}: {e}".split())[:400]
        _say(f"RGCOLL scope={scope} ws={ws} rank={rank} error={msg}")
        os._exit(4)


def _bandwidth(torch: ModuleType, dist: ModuleType, scope: str, ws: int, rank: int, device: str, sync: bool,
               nbytes: int, warmup: int, iters: int) -> None:
    """Mean seconds per all_reduce of nbytes of float32, after warm-up (one RGCOLL-BW line)."""
    t = torch.ones(max(1, nbytes // 4), device=device)
    for _ in range(warmup):
        dist.all_reduce(t)
    if sync:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    if sync:
        torch.cuda.synchronize()
    took = (time.perf_counter() - t0) / iters
    _say(f"RGCOLL-BW scope={scope} ws={ws} rank={rank} bytes={t.numel() * 4} iters={iters} warmup={warmup} "
         f"mean_s={took:.6e}")


def world(scope: str, ws: int, ranks: list[tuple[int, int]], addr: str, port: int, backend: str, timeout_s: float,
          grace_s: float, join_s: float = 0.0, bw: tuple[int, int, int] = (0, 0, 0)) -> str:
    """Run the given (global rank, local rank) pairs of a world of size ws; returns the status."""
    t0 = time.monotonic()
    join_s = join_s or timeout_s
    sys.stdout.flush()
    joined_r, joined_w = os.pipe()
    children: dict[int, int] = {}
    for rank, local in ranks:
        pid = os.fork()
        if pid == 0:
            os.close(joined_r)
            _rank(scope, ws, rank, local, addr, port, backend, timeout_s, join_s, joined_w, bw)
        children[pid] = rank
    os.close(joined_w)
    codes: dict[int, int] = {}
    joined = 0
    # until every rank has joined: the rendezvous bound, then the collective's; once all have
    # joined, the collective's bound counts from then
    deadline = t0 + join_s + timeout_s + grace_s
    while children and time.monotonic() < deadline:
        ready, _, _ = select.select([joined_r], [], [], 0.05)
        if ready:
            got = os.read(joined_r, 64)
            joined += len(got)
            if got and joined == len(ranks):
                deadline = time.monotonic() + timeout_s + grace_s
        pid, wstatus = os.waitpid(-1, os.WNOHANG)
        if pid in children:
            codes[children.pop(pid)] = os.waitstatus_to_exitcode(wstatus)
    os.close(joined_r)
    killed = sorted(children.values())
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in list(children):
        os.waitpid(pid, 0)  # reap: nothing of ours outlives the probe
    ok = [r for r, c in codes.items() if c == 0]
    if killed:
        status = "timeout"
    elif len(ok) == len(ranks):
        status = "ok"
    elif any(c == 3 for c in codes.values()):
        status = "wrong"
    else:
        status = "error"
    extra = f" killed={','.join(map(str, killed))}" if killed else ""
    print(f"RGCOLL-WORLD scope={scope} ws={ws} status={status} ranks_ok={len(ok)}/{len(ranks)} "
          f"elapsed={time.monotonic() - t0:.1f}s timeout={timeout_s:g}s{extra}", flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world-sizes", default="1,2,4", help="this node alone: the world sizes to run, in order "
                    "('' for none)")
    ap.add_argument("--local-addr", default="127.0.0.1", help="rendezvous address of this node's own worlds")
    ap.add_argument("--nnodes", type=int, default=1, help="across nodes: how many nodes take part")
    ap.add_argument("--node-rank", type=int, default=0)
    ap.add_argument("--ranks-per-node", type=int, default=4)
    ap.add_argument("--master-addr", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=29800, help="this node's world w rendezvouses on port+w")
    ap.add_argument("--across-port", type=int, default=29900, help="the run across nodes rendezvouses here")
    ap.add_argument("--backend", default="auto", choices=["auto", "nccl", "gloo"])
    ap.add_argument("--timeout", type=float, default=45.0, help="process-group timeout per world (s)")
    ap.add_argument("--grace", type=float, default=15.0, help="then this long before its ranks are killed (s)")
    ap.add_argument("--join-timeout", type=float, default=0.0,
                    help="how long a world's ranks wait for each other at the rendezvous (s; 0: the "
                    "process-group timeout)")
    ap.add_argument("--bw-bytes", type=int, default=0, help="this node's own worlds of 2+ ranks: time an "
                    "all_reduce of this many bytes of float32 (0: correctness only)")
    ap.add_argument("--bw-warmup", type=int, default=5, help="untimed all_reduces before the timed ones")
    ap.add_argument("--bw-iters", type=int, default=20, help="timed all_reduces (the mean is printed)")
    a = ap.parse_args(argv)
    # Import torch once, here, so no world's bound is spent importing it in every rank. This
    # does not initialise a GPU (that happens in the ranks, after the fork).
    try:
        import torch
        import torch.distributed
        tv = str(torch.__version__)
    except ImportError as e:
        tv = f"missing ({e})"
    print(f"RGCOLL-START pid={os.getpid()} python={sys.version.split()[0]} torch={tv} nnodes={a.nnodes} "
          f"node_rank={a.node_rank} backend={a.backend}", flush=True)
    bad = 0
    for ws in (int(x) for x in a.world_sizes.split(",") if x.strip()):
        bad += world("local", ws, [(r, r) for r in range(ws)], a.local_addr, a.port + ws, a.backend, a.timeout,
                     a.grace, a.join_timeout, (a.bw_bytes, max(1, a.bw_warmup), max(1, a.bw_iters))) != "ok"
    if a.nnodes > 1:  # then every node's ranks together (the other nodes may still be on their own worlds)
        ws = a.nnodes * a.ranks_per_node
        ranks = [(a.node_rank * a.ranks_per_node + j, j) for j in range(a.ranks_per_node)]
        bad += world("across", ws, ranks, a.master_addr, a.across_port, a.backend, a.timeout, a.grace,
                     a.join_timeout) != "ok"
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
