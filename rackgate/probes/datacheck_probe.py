#!/usr/bin/env python3
"""The expert path checked element by element: all_reduce, all_gather, reduce_scatter and the EP
dispatch/combine all_to_all (uneven splits) over torch.distributed, every element compared.

Shipped with rackgate and run unchanged in every node's container (fed on stdin:
`python3 - ARGS < datacheck_probe.py`, nothing written on the node). One probe process per
node imports torch once and forks one process per rank of its own GPUs; every rank of the world
runs the same schedule and writes its OWN verdict, one `RGDATA {json}` line in one write(2) on
stdout -- never a rank-0 summary: a rank that received wrong data says so itself.

    python3 - --members 0:0,0:1,1:0,1:1 --node 0 --master-addr 10.0.0.1 --port 29700 \
        --sizes 4096,1073741824 --iters 20 --backend auto

`--members` lists the world in rank order as node-index:gpu; this process runs the members of
`--node`. The suite runs the whole rack this way, then (bisection) subsets of it.

The data pattern (every rank computes every expected value itself, nothing is exchanged but the
collective's own data): element idx of what rank `src` sends to rank `dst` in iteration `it` is

    base(idx, it) = ((idx * 2654435761 + it * 40503 + 12345) mod 2^31) >> 11      (< 2^20)
    spread(idx, dst) = (idx + 7 * dst) mod 251 + 1                                 (1..251)
    value = base + (src + 1) * spread                                              (int32)

so a value made for another destination, another source, another offset or another iteration
differs, and the sums of all_reduce / reduce_scatter have a closed form
(ws * base + spread * ws(ws+1)/2, exact in int32 up to 1024 ranks). A wrong element is located
by where it sits: the (source -> destination) segment of the output, the offset range inside it,
how many, the first iteration it was seen.

Sizes are bytes per rank, as nccl-tests counts them: all_reduce and all_to_all move S bytes in
and out per rank, all_gather's output and reduce_scatter's input are S bytes. all_to_all is the
MoE dispatch: rank s sends split(s, d, it) elements to d (router-like weights 0..6, some zero),
then the combine sends each received segment back, +1 (the expert's work), with the splits
reversed.

Bounds: the rendezvous waits --join-timeout for every member to arrive (each sets arrive/<rank>
in the store); a member that never arrives ends every other rank's wait as status "absent"
naming it. Each collective runs under the process group's timeout (--op-timeout); a rank that
makes no progress for --op-timeout + --grace is killed by this process (its own child) and
reported for it as status "killed" with the collective it was in. Rank 0 stops the pass
between iterations once --budget seconds have passed since the rendezvous (every rank follows
its word through the store), so the pass keeps its time.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys
import time
import warnings
from typing import Any

OPS = ("all_reduce", "all_gather", "reduce_scatter", "dispatch", "combine")
MAX_LINE = 3800  # one write(2) of a pipe stays whole below PIPE_BUF (4096)
MAX_WRONG = 24  # located wrong segments kept per rank (the rest counted)


def _say(rec: dict[str, Any]) -> None:
    """One verdict line, in one write(2) (ranks share stdout); cut to fit, saying how much was cut."""
    wrong = rec.get("wrong", [])
    line = "RGDATA " + json.dumps(rec, sort_keys=True)
    while len(line) > MAX_LINE and wrong:
        wrong.pop()
        rec["wrong_cut"] = rec.get("wrong_cut", 0) + 1
        line = "RGDATA " + json.dumps(rec, sort_keys=True)
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())


def pattern(torch: Any, src: int, dst: int, n: int, it: int, device: str) -> Any:
    idx = torch.arange(n, dtype=torch.int64, device=device)
    base = ((idx * 2654435761 + it * 40503 + 12345) % 2**31) >> 11
    spread = (idx + 7 * dst) % 251 + 1
    return (base + (src + 1) * spread).to(torch.int32)


def summed(torch: Any, ws: int, dst: int, n: int, it: int, device: str) -> Any:
    """What the sum over every source of pattern(src, dst, ...) must be."""
    idx = torch.arange(n, dtype=torch.int64, device=device)
    base = ((idx * 2654435761 + it * 40503 + 12345) % 2**31) >> 11
    spread = (idx + 7 * dst) % 251 + 1
    return (ws * base + spread * (ws * (ws + 1) // 2)).to(torch.int32)


def splits(ws: int, n: int, it: int) -> list[list[int]]:
    """split[s][d]: elements rank s dispatches to rank d in iteration it (a router's uneven,
    sometimes empty, choice; every rank computes the same matrix)."""
    per = max(1, n // ws)
    return [[per * ((s * 31 + d * 17 + it * 13) % 7) // 3 for d in range(ws)] for s in range(ws)]


def locate(torch: Any, got: Any, want: Any, segments: list[tuple[int, int, int]]) -> list[tuple[int, int, int, int]]:
    """[(src, count, first offset, last offset)] of the wrong elements, per (src, start, length)
    segment of the output (src -1: a sum over every source)."""
    bad = (got != want).nonzero().flatten()
    if bad.numel() == 0:
        return []
    out = []
    for src, start, length in segments:
        inside = bad[(bad >= start) & (bad < start + length)]
        if inside.numel():
            out.append((src, int(inside.numel()), int(inside.min()) - start, int(inside.max()) - start))
    return out


class Rank:
    def __init__(self, a: argparse.Namespace, rank: int, ws: int, local: int, members: list[str], progress: int):
        self.a, self.rank, self.ws, self.local, self.members, self.progress = a, rank, ws, local, members, progress
        self.found: dict[tuple[str, int, int], dict[str, int]] = {}
        self.checked = 0

    def tell(self, what: str) -> None:
        os.write(self.progress, f"{self.rank} {what}\n".encode())

    def verdict(self, status: str, **kw: Any) -> None:
        self.tell("verdict")  # the probe then knows this rank spoke for itself
        wrong = [dict(op=op, bytes=size, src=src, src_member=self.members[src] if src >= 0 else "sum",
                      dst=self.rank, **v) for (op, size, src), v in sorted(self.found.items())]
        _say(dict(run=self.a.run, rank=self.rank, member=self.members[self.rank], ws=self.ws, status=status,
                  checked=self.checked, wrong=wrong, pid=os.getpid(), **kw))

    def record(self, op: str, size: int, it: int, located: list[tuple[int, int, int, int]]) -> None:
        for src, count, first, last in located:
            v = self.found.setdefault((op, size, src), {"count": 0, "first_offset": first, "last_offset": last,
                                                        "first_iter": it, "iters": 0})
            v["count"] += count
            v["iters"] += 1
            v["first_offset"], v["last_offset"] = min(v["first_offset"], first), max(v["last_offset"], last)

    def run(self) -> None:
        import datetime

        import torch
        import torch.distributed as dist
        warnings.filterwarnings("ignore")
        a, rank, ws = self.a, self.rank, self.ws
        os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(ws), "LOCAL_RANK": str(self.local),
                           "MASTER_ADDR": a.master_addr, "MASTER_PORT": str(a.port)})  # as torchrun sets them
        backend = a.backend
        if backend == "auto":
            backend = "nccl" if torch.cuda.is_available() else "gloo"
        device = "cpu"
        if backend == "nccl":
            torch.cuda.set_device(self.local)
            device = f"cuda:{self.local}"
        t0 = time.monotonic()
        try:
            store = dist.TCPStore(a.master_addr, a.port, ws, rank == 0, timeout=datetime.timedelta(seconds=a.join_timeout),
                                  wait_for_workers=False)
        except Exception as e:  # noqa: BLE001 - the store's host (rank 0) never came
            self.verdict("absent", missing=[0], error=" ".join(f"{type(e).__name__}: {e}".split())[:300])
            os._exit(5)
        store.set(f"arrive/{rank}", "1")
        deadline = t0 + a.join_timeout
        missing = list(range(ws))
        while missing and time.monotonic() < deadline:
            missing = [r for r in missing if not store.check([f"arrive/{r}"])]
            if missing:
                time.sleep(0.05)
        if missing:
            self.verdict("absent", missing=missing, error=f"did not arrive within {a.join_timeout:g}s")
            os._exit(5)
        dist.init_process_group(backend, store=dist.PrefixStore("pg", store), rank=rank, world_size=ws,
                                timeout=datetime.timedelta(seconds=a.op_timeout))
        self.tell("joined")
        sizes = [int(s) for s in a.sizes.split(",") if s]
        ops = [o for o in a.ops.split(",") if o]
        started = time.monotonic()
        iters_done, where = 0, ""
        try:
            for it in range(a.iters):
                if rank == 0:  # the budget: rank 0's word, the same for every rank
                    store.set(f"go/{it}", "1" if it == 0 or time.monotonic() - started < a.budget else "0")
                store.wait([f"go/{it}"], datetime.timedelta(seconds=a.op_timeout))
                if store.get(f"go/{it}") != b"1":
                    break
                for size in sizes:
                    for op in ops:
                        where = f"{op} {size} B iteration {it}"
                        self.tell(where)
                        store.set(f"at/{rank}", where)
                        self.one(torch, dist, op, size, it, device)
                iters_done = it + 1
            if backend == "nccl":
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a collective that failed or timed out: who was where
            behind = {}
            for r in range(ws):
                try:
                    at = store.get(f"at/{r}").decode() if store.check([f"at/{r}"]) else "(never started)"
                except Exception:  # noqa: BLE001
                    at = "(store unreachable)"
                if at != where:
                    behind[str(r)] = at
            self.verdict("timeout" if "imeout" in str(e) else "error", at=where, iters_done=iters_done,
                         others_at=behind, error=" ".join(f"{type(e).__name__}: {e}".split())[:300])
            os._exit(6)
        self.verdict("wrong" if self.found else "ok", iters_done=iters_done, iters=a.iters,
                     elapsed_s=round(time.monotonic() - t0, 3))
        self.tell("done")
        try:  # no rank leaves while another may still take its data (then no teardown to wait for)
            dist.barrier()
        except Exception:  # noqa: BLE001 - the verdict is out
            pass
        os._exit(3 if self.found else 0)

    def one(self, torch: Any, dist: Any, op: str, size: int, it: int, device: str) -> None:
        ws, r = self.ws, self.rank
        n = max(ws, size // 4)
        m = n // ws
        if op == "all_reduce":
            t = pattern(torch, r, 0, n, it, device)
            dist.all_reduce(t)
            got, want, segs = t, summed(torch, ws, 0, n, it, device), [(-1, 0, n)]
        elif op == "all_gather":
            got = torch.empty(m * ws, dtype=torch.int32, device=device)
            dist.all_gather_into_tensor(got, pattern(torch, r, r, m, it, device))
            want = torch.cat([pattern(torch, s, s, m, it, device) for s in range(ws)])
            segs = [(s, s * m, m) for s in range(ws)]
        elif op == "reduce_scatter":
            got = torch.empty(m, dtype=torch.int32, device=device)
            dist.reduce_scatter_tensor(got, torch.cat([pattern(torch, r, d, m, it, device) for d in range(ws)]))
            want, segs = summed(torch, ws, r, m, it, device), [(-1, 0, m)]
        else:
            sp = splits(ws, n, it)
            if op == "dispatch":  # r sends sp[r][d] to d; receives sp[s][r] from every s
                send = torch.cat([pattern(torch, r, d, sp[r][d], it, device) for d in range(ws)])
                ins, outs = [sp[r][d] for d in range(ws)], [sp[s][r] for s in range(ws)]
                want = torch.cat([pattern(torch, s, r, sp[s][r], it, device) for s in range(ws)])
            else:  # combine: back to the sources, +1 (the expert's work); r gets its own tokens back
                send = torch.cat([pattern(torch, s, r, sp[s][r], it, device) for s in range(ws)]) + 1
                ins, outs = [sp[s][r] for s in range(ws)], [sp[r][d] for d in range(ws)]
                want = torch.cat([pattern(torch, r, d, sp[r][d], it, device) for d in range(ws)]) + 1
            got = torch.empty(sum(outs), dtype=torch.int32, device=device)
            dist.all_to_all_single(got, send, outs, ins)
            starts = [sum(outs[:i]) for i in range(ws)]
            segs = [(s, starts[s], outs[s]) for s in range(ws)]
        self.checked += got.numel()
        self.record(op, size, it, locate(torch, got, want, segs))


def _heard(fd: int, buf: bytes, wait: float, last: dict[int, float], at: dict[int, str], spoke: set[int]) -> bytes:
    """Read the ranks' progress lines waiting on `fd` (`<rank> <where>`, `<rank> verdict`)."""
    while select.select([fd], [], [], wait)[0]:
        got = os.read(fd, 65536)
        if not got:
            break
        buf += got
        *lines, buf = buf.split(b"\n")
        for ln in lines:
            r_s, _, what = ln.decode(errors="replace").partition(" ")
            if r_s.isdigit() and what == "verdict":
                spoke.add(int(r_s))
            elif r_s.isdigit():
                last[int(r_s)], at[int(r_s)] = time.monotonic(), what
        wait = 0
    return buf


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", required=True, help="the world in rank order: node-index:gpu,...")
    ap.add_argument("--node", type=int, required=True, help="this node's index: run its members")
    ap.add_argument("--master-addr", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=29700)
    ap.add_argument("--backend", default="auto", choices=["auto", "nccl", "gloo"])
    ap.add_argument("--sizes", default="4096,1048576", help="bytes per rank, comma-separated")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--join-timeout", type=float, default=120.0)
    ap.add_argument("--op-timeout", type=float, default=45.0)
    ap.add_argument("--grace", type=float, default=15.0)
    ap.add_argument("--budget", type=float, default=600.0, help="no new iteration after this many seconds")
    ap.add_argument("--run", default="whole", help="a label copied into every verdict")
    a = ap.parse_args(argv)
    members = [m.strip() for m in a.members.split(",") if m.strip()]
    mine = [(r, int(m.split(":")[1])) for r, m in enumerate(members) if int(m.split(":")[0]) == a.node]
    try:
        import torch
        import torch.distributed
        tv = str(torch.__version__)
    except ImportError as e:
        tv = f"missing ({e})"
    print(f"RGDATA-START pid={os.getpid()} torch={tv} node={a.node} ranks={','.join(str(r) for r, _ in mine)} "
          f"ws={len(members)} run={a.run}", flush=True)
    if tv.startswith("missing"):
        return 2
    prog_r, prog_w = os.pipe()
    children: dict[int, int] = {}
    for rank, gpu in mine:
        pid = os.fork()
        if pid == 0:
            os.close(prog_r)
            try:
                Rank(a, rank, len(members), gpu, members, prog_w).run()
            except BaseException as e:  # noqa: BLE001 - our own error, said as such
                os.write(prog_w, f"{rank} verdict\n".encode())
                _say(dict(run=a.run, rank=rank, member=members[rank], ws=len(members), status="error",
                          error=" ".join(f"{type(e).__name__}: {e}".split())[:300], wrong=[], checked=0))
            os._exit(4)
        children[pid] = rank
    os.close(prog_w)
    # each rank: until it joined, the rendezvous bound (it ends itself); then op_timeout + grace
    # from its last sign of progress, and the whole pass within the budget
    t0 = time.monotonic()
    last = {r: t0 + a.join_timeout for r in children.values()}
    at = {r: "rendezvous" for r in children.values()}
    spoke: set[int] = set()  # ranks that printed their own verdict
    end = t0 + a.join_timeout + a.budget + a.op_timeout * 2 + a.grace
    buf = b""
    while children:
        now = time.monotonic()
        late = [pid for pid, r in children.items() if now > last[r] + a.op_timeout + a.grace or now > end]
        for pid in late:
            r = children.pop(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            _say(dict(run=a.run, rank=r, member=members[r], ws=len(members), status="killed", at=at[r], wrong=[],
                      checked=0, pid=pid, error=f"no progress for {a.op_timeout + a.grace:g}s (op timeout + grace): ended by "
                      "the probe"))
        buf = _heard(prog_r, buf, 0.05, last, at, spoke)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            r = children.pop(pid, -1)
            buf = _heard(prog_r, buf, 0, last, at, spoke)  # what it said before it ended
            if r >= 0 and r not in spoke:  # ended without a word (NCCL's watchdog aborts a timed-out rank)
                _say(dict(run=a.run, rank=r, member=members[r], ws=len(members), status="error", at=at[r], wrong=[],
                          checked=0, pid=pid, error=f"the rank's process ended ({os.waitstatus_to_exitcode(status)}) "
                          "without a verdict"))
    os.close(prog_r)
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)  # torch's own teardown at exit takes seconds and has nothing left to do
