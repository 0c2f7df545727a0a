"""One DP rank of the simulated ATOM server (EngineCore + ModelRunner in one child process):
its boot (RCCL, the rendezvous of all ranks, the KV budget, MegaMoE, the hotswap hook) and the
forward passes it serves over loopback, one request per line of JSON. What a fault changes
here is read from `ServerFaults` (behaviour.py); what a rank prints is in log.py.

The ranks of one launch meet through files under the sim directory (keyed by the API port).
"""
from __future__ import annotations

import argparse
import ctypes
import gzip
import json
import os
import signal
import socket
import socketserver
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .. import rasfiles
from ..state import ServerState, node_dir
from .log import MEGA_WIRE_RENAMED, Log, RankLog

FOREVER = 10 ** 6
# ATOM's default --cudagraph-capture-sizes (atom/model_engine/arg_utils.py): a decode batch of n
# runs in the graph of the smallest captured size >= n
CAPTURED = (1, 2, 4, 8, 16, 32, 48, 64, 128, 256)
RUN: dict = {}  # {"port": the API port of this launch}, set by main


def atom_dir() -> Path:
    """Files the nodes of one launch share (keyed by the API port, so a relaunch starts clean)."""
    d = node_dir().parent / "atom" / str(RUN.get("port", 0))
    d.mkdir(parents=True, exist_ok=True)
    return d


def touch(p: Path, text: str = "") -> None:
    tmp = p.with_suffix(p.suffix + f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(p)


def hang() -> None:
    """A rank that never returns (its peers wait on it in the next collective)."""
    while True:
        time.sleep(FOREVER)


def set_title(title: str) -> None:
    """What setproctitle does for ATOM's workers, as far as comm goes (ps -o comm)."""
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, ctypes.c_char_p(title.encode()[:15]), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def die_with_parent(parent: int) -> None:
    """A rank goes when the server process that forked it goes, however it went (SIGTERM, SIGKILL):
    ATOM's engine-core processes do not outlive the API server (multiprocessing children watching
    their parent), and a sim rank that did would hold its port and CPU after the suite stopped the
    server by its PID."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent went before the line above took effect
        os._exit(0)


@dataclass
class Seen:
    """One request as the rank ran it: its own sampling fields, the most requests the rank ran at
    once while it ran, and the sampling fields of the others among them."""
    sampling: frozenset[str]
    most: int = 1
    others: set[str] = field(default_factory=set)


class Batch:
    """The requests a rank runs at once: each request's batch is what ran beside it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: list[Seen] = []

    def join(self, sampling: list[str]) -> Seen:
        me = Seen(frozenset(sampling))
        with self.lock:
            for o in self.running:
                o.others |= me.sampling
                me.others |= o.sampling
            self.running.append(me)
            for o in self.running:
                o.most = max(o.most, len(self.running))
        return me

    def leave(self, me: Seen) -> None:
        with self.lock:
            self.running.remove(me)


class PrefixCache:
    """The rank's cached KV blocks, keyed by the prompt's chained block hashes (routes.blocks)."""

    def __init__(self, on: bool) -> None:
        self.on, self.lock, self.blocks = on, threading.Lock(), set()  # type: ignore[var-annotated]

    def hit(self, blocks: list[str]) -> int:
        """The prompt's leading blocks already cached (then every block of it is)."""
        if not self.on:
            return 0
        with self.lock:
            n = next((i for i, b in enumerate(blocks) if b not in self.blocks), len(blocks))
            if len(self.blocks) > 200_000:
                self.blocks.clear()
            self.blocks.update(blocks)
        return n


class Rank:
    def __init__(self, rank: int, args: argparse.Namespace, node: dict, server: ServerState, log: Log, env: dict):
        self.rank, self.args, self.node, self.server, self.env = rank, args, node, server, env
        self.out = RankLog(log, rank)
        self.faults = server.behaviours()
        self.step = server.step_s
        self.dir = atom_dir()
        self.inflight = 0
        self.kv_used = 0
        self.lock = threading.Lock()
        self.profiling = False
        self.batch = Batch()
        self.cache = PrefixCache(bool(getattr(args, "enable_prefix_caching", False)))
        self.dead = False
        self.stuck = False
        # GPU error counters a fault makes rise under the serving load (rackgate/sim/rasfiles.py)
        self.ras_pending = any(r.get("stage") == rasfiles.SERVING for g in node["gpus"]
                               for r in (g.get("ras") or {}).get("rises", []))

    def fault(self, name: str):
        """The behaviour `name` (a ServerFaults field) when it hits this rank, else None."""
        return self.faults.on(name, self.rank)

    def boot(self) -> None:
        a = self.args
        time.sleep(self.step)
        self.out.rccl_version()
        if self.fault("rendezvous_stall"):
            hang()  # ncclCommInitRank never returns for this rank; everyone else waits on it forever
        touch(self.dir / f"rdv-dp{self.rank}")
        while not all((self.dir / f"rdv-dp{r}").exists() for r in range(a.data_parallel_size)):
            time.sleep(0.05)
        time.sleep(self.step)
        if self.env.get("MEGA_WIRE") and self.env.get("MEGA_WIRE") != self.env.get("MEGA_DISPATCH_WIRE"):
            self.fatal(*MEGA_WIRE_RENAMED)
        if self.fault("pinned_fallback"):
            self.out.pinned_fallback()
        self.kv_budget()
        # Current ATOM logs the model's global expert count; the runbook's image logged the
        # per-rank share (server state "megamoe_experts": "per_rank").
        ep = a.data_parallel_size if a.enable_expert_parallel else 1
        experts = 896 // ep if self.server.megamoe_experts == "per_rank" else 896
        self.out.megamoe(ep, experts, self.env.get("MEGA_DISPATCH_WIRE", "bf16"))
        if self.env.get("HSA_TOOLS_LIB"):
            self.hotswap()
        time.sleep(self.step)
        rt = self.fault("runtime_fatal")
        if rt:
            self.out.runtime_fatal(rt.kind)
            if rt.kind == "rocblas-arch":  # rocblas_abort(): the node's engine process ends on SIGABRT
                os.kill(os.getppid(), signal.SIGABRT)
            hang()
        self.out.ready()

    def kv_budget(self) -> None:
        """model_runner.get_num_blocks: the arithmetic and its two messages, in ATOM's format."""
        a = self.args
        gpu = self.node["gpus"][(self.rank - a.data_parallel_rank) % len(self.node["gpus"])]
        total = float(gpu["hbm_gib"])
        big_batch = a.max_num_batched_tokens >= 16384
        peak_torch, cudagraph = (236.08, 9.40) if big_batch else (194.67, 1.18)
        peak_torch += self.server.image_extra_torch_gb  # an image that holds more
        non_torch, safety = 24.94, total * 0.02
        busy = self.fault("rack_busy")
        if busy:
            # Someone else's weights land on these GPUs while we load: device-used minus our
            # reserved memory (non_torch) swallows the budget.
            time.sleep(busy.delay_s)
            non_torch += busy.foreign_gb
        budget = total * a.gpu_memory_utilization
        available = budget - peak_torch - non_torch - cudagraph - safety
        free = total - peak_torch - non_torch
        blocks = max(0, int(available * (1 << 30) / 1179648))
        reserved = 3.35 * a.max_num_seqs / 8
        # Current ATOM raises the per-request cache error before it logs the budget; the
        # runbook's image logged the budget first (server state "kv_budget_first": true).
        if available < reserved and not self.server.kv_budget_first:
            self.kv_error(available, reserved, budget, total)
        self.out.memory_budget(total, free, a.gpu_memory_utilization, budget, peak_torch, non_torch, cudagraph,
                               safety, available, blocks)
        if available < reserved:
            self.kv_error(available, reserved, budget, total)

    def kv_error(self, available: float, reserved: float, budget: float, total: float) -> None:
        a = self.args
        msg = self.out.kv_error(reserved, a.max_num_seqs, available, a.gpu_memory_utilization,
                                (budget - available + reserved) / total)
        self.fatal(f"RuntimeError: {msg}", "model_engine/model_runner.py:1646", engine_msg=msg)

    def fatal(self, exc_line: str, where: str, engine_msg: str | None = None) -> None:
        """An exception in the rank: run_engine logs it with its traceback; the rank then hangs
        (its peers wait on it in the next collective), as the real engine does."""
        self.out.exception(exc_line, where, engine_msg)
        hang()

    def hotswap(self) -> None:
        """The rocjitsu hook (HSA_TOOLS_LIB): it installs on every rank; it translates only on
        A0 silicon and only when the prefix's translation store is populated."""
        self.out.hotswap_installed()
        if self.server.silicon == "A0" and self.server.store_entries >= 1000:
            self.out.hotswap_translated()

    # --- serving: one request per line of JSON over loopback ------------------------------
    def handle(self, req: dict) -> dict | None:
        """None: the rank never answers (dead or stuck)."""
        op = req.get("op")
        if op == "profile":
            return self.profile(req["action"])
        if self.dead or self.stuck or self.fault("hung_ranks"):
            return None  # accepted, never answered: the request hangs, /health stays 200
        if self.ras_pending:  # the first forward pass this rank serves
            self.ras_pending = False
            rasfiles.during(rasfiles.SERVING)
        tokens = int(req.get("prompt_tokens", 0)) + int(req.get("max_tokens", 0))
        with self.lock:
            self.inflight += 1
            load = self.inflight
            self.kv_used += tokens
            used = self.kv_used
        seen = self.batch.join(list(req.get("sampling") or ()))
        cached = self.cache.hit(list(req.get("blocks") or ()))
        try:
            if self.fault("rank_dead"):
                self.dead = True
                self.out.ca_comm_assert()
                os._exit(1)
            if self.fault("longctx_phi") and int(req.get("prompt_tokens", 0)) > self.args.max_num_batched_tokens:
                self.dead = True
                self.out.phi_assert()
                os._exit(134)
            dl = self.fault("dp_deadlock")
            if dl and used / float(dl.kv_tokens) >= 0.986:
                self.stuck = True
                self.out.kv_full(load)
                touch(self.dir / "stuck", str(self.rank))
                return None
            time.sleep(float(req.get("delay_s", 0)) + float(req.get("decode_s", 0)) * int(req.get("max_tokens", 0)))
            held = float(req.get("until") or 0) - time.monotonic()  # the batch forms while the rank holds it
            if held > 0:
                time.sleep(held)
            ctx = self.fault("context_ranks")
            long = ctx is not None and int(req.get("prompt_tokens", 0)) > ctx.past_tokens
            return {"ok": True, "rank": self.rank, "batch": seen.most, "with": sorted(seen.others),
                    "cached_blocks": cached, "corrupt": "context-corrupt" if long else self.corrupt(seen, cached)}
        finally:
            self.batch.leave(seen)
            with self.lock:
                self.inflight -= 1
                self.kv_used -= tokens

    def corrupt(self, seen: Seen, cached: int) -> str | None:
        """The output behaviour a greedy request gets from what it ran with (None: healthy): a
        request setting top_k beside it, its batch's captured bucket, a prefix-cache hit."""
        greedy = "temperature" not in seen.sampling
        if greedy and self.fault("mixed_topk_ranks") and "top_k" in seen.others:
            return "batch-flip"
        b = self.fault("bucket_ranks")
        if greedy and b and next((c for c in CAPTURED if c >= seen.most), seen.most) == b.bucket:
            return "batch-flip"
        if greedy and cached and self.fault("cache_ranks"):
            return "batch-flip"
        return None

    def profile(self, action: str) -> dict:
        d = self.args.torch_profiler_dir
        if action == "start":
            self.profiling = True
        elif self.profiling and d:
            self.profiling = False
            out = node_dir() / "container" / d.lstrip("/") / f"dp{self.rank}_tp0"
            out.mkdir(parents=True, exist_ok=True)
            name = f"Kimi-K3_ts_{time.strftime('%Y%m%d_%H%M%S')}_{self.rank:03d}.pt.trace.json.gz"
            with gzip.open(out / name, "wt") as fh:
                json.dump({"traceEvents": [{"name": "sim_forward", "ph": "X", "ts": 0, "dur": 1000,
                                            "pid": os.getpid(), "tid": 0}]}, fh)
            return {"ok": True, "trace": str(out / name)}
        return {"ok": True}

    def watch_dp_sync(self) -> None:
        """_sync_dp_state: when a peer stops joining the all_reduce, every other rank times out
        (after ATOM's 1800000 ms, scaled) and agrees to shut down; the stuck one logs nothing."""
        stuck = self.dir / "stuck"
        while not stuck.exists():
            time.sleep(0.1)
        if self.stuck:
            return
        time.sleep(self.faults.dp_deadlock.sync_timeout_s)
        self.stuck = True
        self.out.dp_sync_timeout()

    def serve(self) -> None:
        rank = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                line = self.rfile.readline()
                try:
                    reply = rank.handle(json.loads(line or b"{}"))
                except Exception:  # noqa: BLE001 - the sim must report its own bugs, not hang
                    reply = {"error": traceback.format_exc(limit=3)}
                if reply is None:
                    hang()
                self.wfile.write((json.dumps(reply) + "\n").encode())

        srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        srv.daemon_threads = True
        if self.faults.dp_deadlock is not None:
            threading.Thread(target=self.watch_dp_sync, daemon=True).start()
        touch(self.dir / f"port-dp{self.rank}", str(srv.server_address[1]))
        srv.serve_forever()


def run_rank(rank: int, args, node, server: ServerState, log: Log, env: dict) -> None:
    set_title(f"ATOM::DP{rank}TP0")
    r = Rank(rank, args, node, server, log, env)
    r.boot()
    r.serve()


def rank_call(rank: int, req: dict, wait_s: float = FOREVER) -> dict | None:
    """Send one request to a rank and wait for its answer. A rank that is gone or stuck never
    answers: the HTTP request then hangs, as on the real rack."""
    port_file = atom_dir() / f"port-dp{rank}"
    try:
        port = int(port_file.read_text())
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.settimeout(wait_s)
            s.sendall((json.dumps(req) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data) if data else None
    except (OSError, ValueError):
        return None
