"""The simulated ATOM server: one process per node, launched with the runbook's flags.

As ATOM does: each node's process (the one the suite launched) logs `Engine kwargs: {...}` and
starts one child process per local DP rank (--data-parallel-rank is the node's first rank,
--data-parallel-size-local how many). The children share the node's stdout, so the node has one
log; each child titles itself ATOM::DP<r>TP0 and, with ATOM_LOG_MORE=1, every record carries a
header naming its process (EngineCore-DP<r>, ModelRunner0/1) and pid. Ranks boot through
`load RCCL version`, a rendezvous of all dp_size ranks, the KV budget arithmetic (`Memory
budget:`), the hotswap hook when HSA_TOOLS_LIB is set, and serve forward passes over loopback.
The node whose first rank is 0 also serves the OpenAI routes on --host:--server-port and routes
each request to a rank (round robin, or the request's data_parallel_rank); a dead or stuck rank
makes its requests hang while /health stays 200, as on the real rack.

Faults (the sim state's server section) change what ranks do; see rackgate/sim/faults/srv.py.
The GSM8K answerer (and any other) plugs in through rackgate.sim.model.ANSWERERS.
"""
from __future__ import annotations

import argparse
import ctypes
import gzip
import itertools
import json
import os
import re
import socket
import socketserver
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import model
from .state import node_dir, this_node

REASONING_TOKENS = 1500  # K3 reasons before it answers; GSM8K needs a large max_tokens
ATOM = "/app/ATOM/atom"
RCCL_VERSION = "2.27.7"
FOREVER = 10 ** 6
# The simulated image's time to first token: every request takes at least this long from reaching
# the server to its answer (prefill and scheduling on the rack), whatever this machine's CPU adds
# below it. It makes the benchmark's throughput, TTFT and TPOT properties of the simulated image,
# as on a real rack, so CPU load barely moves them (issue 15). The sim state's
# server.first_token_s overrides it; decode_s_per_token (fault slower-decode) adds to it.
FIRST_TOKEN_S = 0.2


# --- ATOM's log format (atom/utils/__init__.py getLogger) --------------------------------
class Log:
    def __init__(self, more: bool):
        self.more = more
        self.lock = threading.Lock()

    def __call__(self, msg: str, proc: str = "MainProcess", where: str = "entrypoints/openai/api_server.py:1163",
                 func: str = "main", level: str = "INFO") -> None:
        now = time.time()
        if self.more:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f".{int(now * 10) % 10}"
            path, _, lineno = where.partition(":")
            text = f"[atom {level}] {stamp} - {proc}:{os.getpid()} - {ATOM}/{path}:{lineno} - {func}\n{msg}"
        else:
            text = f"[atom {time.strftime('%H:%M:%S', time.localtime(now))}] {msg}"
        self.raw(text)

    def raw(self, text: str) -> None:
        """A line written outside ATOM's logger (RCCL, the hotswap hook, stderr tracebacks)."""
        with self.lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="atom.entrypoints.openai_server")
    ap.add_argument("--model", required=True)
    ap.add_argument("--served-model-name", default=None)
    ap.add_argument("-tp", "--tensor-parallel-size", type=int, default=1)
    ap.add_argument("--data-parallel-size", type=int, default=1)
    ap.add_argument("--data-parallel-size-local", type=int, default=1)
    ap.add_argument("--data-parallel-rank", type=int, default=0)
    ap.add_argument("--data-parallel-master-ip", default="127.0.0.1")
    ap.add_argument("--max-model-len", "--max_model_len", type=int, default=None)
    ap.add_argument("--max-num-batched-tokens", "--max_num_batched_tokens", type=int, default=16384)
    ap.add_argument("--max-num-seqs", "--max_num_seqs", type=int, default=512)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    ap.add_argument("--kv-cache-dtype", "--kv_cache_dtype", default=None)
    ap.add_argument("--torch-profiler-dir", default=None)
    ap.add_argument("--fake-eplb", action="store_true")
    ap.add_argument("--enable-expert-parallel", action="store_true")
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--server-port", type=int, default=8000)
    args, _unknown = ap.parse_known_args(argv)
    return args


class CompilationConfig:
    """Stands for ATOM's CompilationConfig: its repr in `Engine kwargs` is not a literal."""

    def __init__(self, level: int):
        self.level = level

    def __repr__(self) -> str:
        return f"CompilationConfig(level={self.level}, cudagraph_mode=<CUDAGraphMode.FULL: 2>, " \
               f"cudagraph_capture_sizes=None)"


# --- the rack-wide rendezvous and rank registry (files under the sim directory) -----------
_RUN: dict = {}


def atom_dir() -> Path:
    """Files the nodes of one launch share (keyed by the API port, so a relaunch starts clean)."""
    d = node_dir().parent / "atom" / str(_RUN.get("port", 0))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _touch(p: Path, text: str = "") -> None:
    tmp = p.with_suffix(p.suffix + f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(p)


def set_title(title: str) -> None:
    """What setproctitle does for ATOM's workers, as far as comm goes (ps -o comm)."""
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, ctypes.c_char_p(title.encode()[:15]), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def _bytes_gb(x: float) -> str:
    return f"{x:.2f}GB"


# --- one DP rank (EngineCore + ModelRunner in one child process) ---------------------------
class Rank:
    def __init__(self, rank: int, args: argparse.Namespace, node: dict, server: dict, log: Log, env: dict):
        self.rank, self.args, self.node, self.server, self.log, self.env = rank, args, node, server, log, env
        self.faults = server.get("rank_faults", {})
        self.step = float(server.get("step_s", 0.08))
        self.dir = atom_dir()
        self.inflight = 0
        self.lock = threading.Lock()
        self.profiling = False
        self.dead = False
        self.stuck = False

    def fault(self, name: str) -> dict | None:
        f = self.faults.get(name)
        if f is None:
            return None
        ranks = f.get("ranks")
        return f if ranks is None or self.rank in ranks else None

    def engine(self, msg: str, where: str = "model_engine/engine_core.py:172", func: str = "__init__",
               level: str = "INFO") -> None:
        self.log(msg, f"EngineCore-DP{self.rank}", where, func, level)

    def runner(self, msg: str, where: str = "model_engine/model_runner.py:1738", func: str = "get_num_blocks",
               level: str = "INFO") -> None:
        self.log(msg, "ModelRunner0/1", where, func, level)

    def boot(self) -> None:
        a = self.args
        time.sleep(self.step)
        self.log.raw(f"[aiter] load RCCL version: {RCCL_VERSION}")
        if self.fault("rendezvous-stall"):
            # ncclCommInitRank never returns for this rank; everyone else waits on it forever.
            while True:
                time.sleep(FOREVER)
        _touch(self.dir / f"rdv-dp{self.rank}")
        while not all((self.dir / f"rdv-dp{r}").exists() for r in range(a.data_parallel_size)):
            time.sleep(0.05)
        time.sleep(self.step)
        if self.env.get("MEGA_WIRE") and self.env.get("MEGA_WIRE") != self.env.get("MEGA_DISPATCH_WIRE"):
            self.fatal("RuntimeError: MEGA_WIRE was renamed to MEGA_DISPATCH_WIRE; update the launch script, "
                       "the old name is no longer read", "model_ops/fused_moe/mori_v2_prepare_finalize.py:88")
        self.kv_budget()
        # Current ATOM logs the model's global expert count; the runbook's image logged the
        # per-rank share (server state "megamoe_experts": "per_rank").
        ep = a.data_parallel_size if a.enable_expert_parallel else 1
        experts = 896 // ep if self.server.get("megamoe_experts") == "per_rank" else 896
        self.runner(f"[MORI-V2] Created MegaMoE: ep_rank={self.rank if ep > 1 else 0} ep_size={ep} hidden=7168 "
                    f"inter=2048 experts={experts} topk=8 M=4096 act=silu gate=noaux_tc quant=fp4 pad=(0,0) "
                    f"swiglu_limit=None dispatch=mori wire={self.env.get('MEGA_DISPATCH_WIRE', 'bf16')} "
                    "force_a8w4=False", "model_ops/fused_moe/mega_moe.py:211", "_get_mega_transport")
        if self.env.get("HSA_TOOLS_LIB"):
            self.hotswap()
        time.sleep(self.step)
        self.engine("Engine Core: EngineCore fully initialized and ready")

    def kv_budget(self) -> None:
        """model_runner.get_num_blocks: the arithmetic and its two messages, in ATOM's format."""
        a = self.args
        gpu = self.node["gpus"][(self.rank - a.data_parallel_rank) % len(self.node["gpus"])]
        total = float(gpu["hbm_gib"])
        big_batch = a.max_num_batched_tokens >= 16384
        peak_torch, cudagraph = (236.08, 9.40) if big_batch else (194.67, 1.18)
        peak_torch += float(self.server.get("image_extra_torch_gb", 0.0))  # an image that holds more
        non_torch, safety = 24.94, total * 0.02
        busy = self.fault("rack-busy")
        if busy:
            # Someone else's weights land on these GPUs while we load: device-used minus our
            # reserved memory (non_torch) swallows the budget.
            time.sleep(float(busy.get("delay_s", 0)))
            non_torch += float(busy.get("foreign_gb", 130.0))
        budget = total * a.gpu_memory_utilization
        available = budget - peak_torch - non_torch - cudagraph - safety
        free = total - peak_torch - non_torch
        blocks = max(0, int(available * (1 << 30) / 1179648))
        reserved = 3.35 * a.max_num_seqs / 8
        # Current ATOM raises the per-request cache error before it logs the budget; the
        # runbook's image logged the budget first (server state "kv_budget_first": true).
        budget_first = bool(self.server.get("kv_budget_first", False))
        if available < reserved and not budget_first:
            self.kv_error(available, reserved, budget, total)
        self.runner(f"Memory budget: total_gpu={_bytes_gb(total)}, free={_bytes_gb(free)}, "
                    f"utilization={a.gpu_memory_utilization}, budget={_bytes_gb(budget)}, "
                    f"peak_torch={_bytes_gb(peak_torch)}, non_torch={_bytes_gb(non_torch)}, "
                    f"cudagraph_est={_bytes_gb(cudagraph)}, safety={_bytes_gb(safety)}, "
                    f"available_for_kv={_bytes_gb(available)}, block_bytes=1179648, num_kvcache_blocks={blocks}")
        if available < reserved:
            self.kv_error(available, reserved, budget, total)

    def kv_error(self, available: float, reserved: float, budget: float, total: float) -> None:
        a = self.args
        need = (budget - available + reserved) / total
        msg = (f"Per-request cache tensor ({reserved:.2f}GB for {a.max_num_seqs} slots) exceeds available KV "
               f"budget ({available:.2f}GB) at --gpu-memory-utilization {a.gpu_memory_utilization:.2f}. "
               f"Set --gpu-memory-utilization >= {min(need, 0.99):.2f} (this only zeroes out the deficit; use a "
               f"higher value for actual KV capacity) or reduce --max-num-seqs (currently {a.max_num_seqs}).")
        self.fatal(f"RuntimeError: {msg}", "model_engine/model_runner.py:1646", engine_msg=msg)

    def fatal(self, exc_line: str, where: str, engine_msg: str | None = None) -> None:
        """An exception in the rank: run_engine logs it with its traceback; the rank then hangs
        (its peers wait on it in the next collective), as the real engine does."""
        msg = engine_msg or exc_line.split(": ", 1)[-1]
        self.engine(f"run_engine: exception: {msg}", "model_engine/engine_core.py:243", "run_engine", "ERROR")
        path, _, lineno = where.partition(":")
        self.log.raw("Traceback (most recent call last):\n"
                     f'  File "{ATOM}/model_engine/engine_core.py", line 240, in run_engine\n'
                     f'  File "{ATOM}/{path}", line {lineno}, in get_num_blocks\n'
                     f"{exc_line}")
        while True:
            time.sleep(FOREVER)

    def hotswap(self) -> None:
        """The rocjitsu hook (HSA_TOOLS_LIB): it installs on every rank; it translates only on
        A0 silicon and only when the prefix's translation store is populated."""
        self.log.raw("[hsa-hotswap-rj] installed eager gfx1250 B0-to-A0 hook")
        if self.server.get("silicon") != "A0" or int(self.server.get("store_entries", 0)) < 1000:
            return
        for i in range(121):
            self.log.raw(f"[hsa-hotswap-rj] eager translation source_id=fnv1a64:{i:016x} input_revision=b0 "
                         f"output_revision=a0 outcome=translated changed=23 translation_status=0")
        for _ in range(27):
            self.log.raw("[hsa-hotswap-rj] reused tier=aot input_bytes=501616 output_bytes=505712 status=0")

    # --- serving: one request per line of JSON over loopback ------------------------------
    def handle(self, req: dict) -> dict | None:
        """None: the rank never answers (dead or stuck)."""
        op = req.get("op")
        if op == "profile":
            return self.profile(req["action"])
        if self.dead or self.stuck:
            return None
        tokens = int(req.get("prompt_tokens", 0)) + int(req.get("max_tokens", 0))
        with self.lock:
            self.inflight += 1
            load = self.inflight
            used = self.kv_used = getattr(self, "kv_used", 0) + tokens
        try:
            if self.fault("rank-dead"):
                self.die_ca_comm()
                return None
            phi = self.fault("longctx-phi")
            if phi and int(req.get("prompt_tokens", 0)) > self.args.max_num_batched_tokens:
                self.die_phi()
                return None
            dl = self.fault("dp-deadlock")
            if dl and used / float(dl.get("kv_tokens", 512)) >= 0.986:
                self.stuck = True
                self.engine(f"Engine {self.rank:03d}: prompt throughput: 0.0 tok/s, Running: {load}, KV usage: 98.6%",
                            "model_engine/scheduler.py:1502", "log_stats")
                _touch(self.dir / "stuck", str(self.rank))
                return None
            time.sleep(float(req.get("delay_s", 0)) + float(req.get("decode_s", 0)) * int(req.get("max_tokens", 0)))
            return {"ok": True, "rank": self.rank}
        finally:
            with self.lock:
                self.inflight -= 1
                self.kv_used -= tokens

    def die_ca_comm(self) -> None:
        self.dead = True
        self.log("Traceback (most recent call last):", "ModelRunner0/1", "model_engine/async_proc.py:133",
                 "busy_loop", "ERROR")
        self.log.raw('  File "/usr/local/lib/python3.12/dist-packages/aiter/dist/parallel_state.py", line 412, in all_gather\n'
                     "    assert not ca_comm.disabled\nAssertionError")
        os._exit(1)

    def die_phi(self) -> None:
        self.dead = True
        self.log.raw("python3: /root/.triton/llvm/llvm-project/llvm/include/llvm/IR/Instructions.h:2778: void "
                     "llvm::PHINode::setIncomingValue(unsigned int, llvm::Value*): Assertion `V && \"PHI node got "
                     "a null value!\"' failed.")
        os._exit(134)

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
        timeout = float((self.faults.get("dp-deadlock") or {}).get("sync_timeout_s", 1.0))
        while not stuck.exists():
            time.sleep(0.1)
        if self.stuck:
            return
        time.sleep(timeout)
        self.stuck = True
        self.engine("Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms",
                    "model_engine/engine_core.py:711", "_sync_dp_state", "WARNING")
        self.engine("Engine Core: All DP ranks agreed to shutdown, exiting busy_loop",
                    "model_engine/engine_core.py:647", "busy_loop")

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
                    while True:
                        time.sleep(FOREVER)
                self.wfile.write((json.dumps(reply) + "\n").encode())

        srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        srv.daemon_threads = True
        if "dp-deadlock" in self.faults:
            threading.Thread(target=self.watch_dp_sync, daemon=True).start()
        _touch(self.dir / f"port-dp{self.rank}", str(srv.server_address[1]))
        srv.serve_forever()


def run_rank(rank: int, args, node, server, log, env) -> None:
    set_title(f"ATOM::DP{rank}TP0")
    r = Rank(rank, args, node, server, log, env)
    r.boot()
    r.serve()


# --- the API server (head node) ------------------------------------------------------------
def pace_until(t: float) -> None:
    """Sleep until monotonic time t (no sleep when this machine was already slower)."""
    left = t - time.monotonic()
    if left > 0:
        time.sleep(left)


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


STREAM_PIECE = re.compile(r"\s*\S+|\s+")  # pieces that join back to the text


class Api(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sim: "SimServer"

    def log_message(self, *a):  # access log off (--disable_uvicorn_access_log)
        pass

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: dict) -> None:
        """`"stream": true`: the reply as OpenAI server-sent events, one chunk a piece of text
        (`data: {...}` lines, then `data: [DONE]`), RACKGATE_SIM_TPOT_S seconds apart (a server
        slowed to a measured time per output token). A client that closes the stream stops the
        generation: the next write fails and nothing more is generated for it."""
        tpot = float(os.environ.get("RACKGATE_SIM_TPOT_S") or 0)
        choice = reply["choices"][0]
        chat = reply["object"] == "chat.completion"
        base = {"id": reply["id"], "object": "chat.completion.chunk" if chat else "text_completion",
                "created": reply["created"], "model": reply["model"]}
        pieces: list[tuple[str, str]] = []
        if chat:
            msg = choice["message"]
            pieces += [("reasoning_content", x) for x in STREAM_PIECE.findall(msg.get("reasoning_content") or "")]
            pieces += [("content", x) for x in STREAM_PIECE.findall(msg.get("content") or "")]
        else:
            pieces += [("text", x) for x in STREAM_PIECE.findall(choice.get("text") or "")]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.end_headers()

        def event(c: dict) -> None:
            self.wfile.write(b"data: " + json.dumps({**base, "choices": [c]}).encode() + b"\n\n")
            self.wfile.flush()
        try:
            for field, x in pieces:
                if tpot:
                    time.sleep(tpot)
                c = {"index": 0, "delta": {field: x}} if chat else {"index": 0, "text": x}
                event({**c, "logprobs": None, "finish_reason": None})
            end = {"index": 0, "delta": {}} if chat else {"index": 0, "text": ""}
            event({**end, "logprobs": None, "finish_reason": choice["finish_reason"]})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client closed the stream
            self.close_connection = True

    def _body(self) -> dict:
        n = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
        except json.JSONDecodeError:
            return {}
        return body if isinstance(body, dict) else {}

    def do_GET(self):
        s = self.sim
        if self.path == "/health":
            return self._send(200, {"status": "ok"})
        if self.path == "/v1/models":
            return self._send(200, {"object": "list", "data": [
                {"id": s.model_name, "object": "model", "created": int(s.started), "owned_by": "atom"}]})
        self._send(404, {"detail": "Not Found"})

    def do_POST(self):
        s, body = self.sim, self._body()
        if self.path in ("/v1/completions", "/v1/chat/completions"):
            requested = body.get("model")
            if requested is not None and str(requested).rstrip("/") != s.model_name.rstrip("/"):
                if s.api == "main":  # validate_model() in atom/entrypoints/openai/api_server.py
                    return self._send(400, {"detail": f"Requested model '{requested}' does not match server "
                                                      f"model '{s.model_name}'"})
                return self._send(404, {"detail": "Not Found"})
            try:
                reply = s.completion(body) if self.path == "/v1/completions" else s.chat(body)
                if body.get("stream"):
                    return self._stream(reply)
                tpot = float(os.environ.get("RACKGATE_SIM_TPOT_S") or 0)
                if tpot:  # slowed as a streamed answer is: one time per output token
                    time.sleep(tpot * int((reply.get("usage") or {}).get("completion_tokens") or 0))
                return self._send(200, reply)
            except ValueError as e:  # value_error_handler
                return self._send(400, {"error": {"message": str(e), "type": "invalid_request_error", "code": 400}})
        if self.path == "/start_profile":
            s.broadcast({"op": "profile", "action": "start"})
            return self._send(200, {"status": "success", "message": "Profiling started"})
        if self.path == "/stop_profile":
            traces = [r.get("trace") for r in s.broadcast({"op": "profile", "action": "stop"}) if r and r.get("trace")]
            return self._send(200, {"status": "success", "message": "Profiling stopped. Trace files generated.",
                                    "traces": traces})
        self._send(404, {"detail": "Not Found"})


class SimServer:
    def __init__(self, args: argparse.Namespace, server: dict):
        self.args, self.server = args, server
        self.faults = set(server["faults"])
        self.api = server.get("api", "image")
        self.model_name = args.served_model_name or args.model
        self.started = time.time()
        self.rr = itertools.count()
        self.lock = threading.Lock()
        self.inflight: dict[int, int] = {}
        self.delay_s = float((server.get("rank_faults", {}).get("slow-server") or {}).get("delay_s", 0))
        self.first_token_s = float(server.get("first_token_s", FIRST_TOKEN_S))

    def broadcast(self, req: dict) -> list:
        return [rank_call(r, req, wait_s=10) for r in range(self.args.data_parallel_size)]

    def forward(self, body: dict, prompt_tokens: int, max_tokens: int) -> None:
        """Route to a DP rank (the request's data_parallel_rank, else round robin) and wait, at
        least FIRST_TOKEN_S from the request's arrival (pace_until)."""
        arrived = time.monotonic()
        a = self.args
        hint = body.get("data_parallel_rank")
        if hint is not None:
            if not isinstance(hint, int) or not 0 <= hint < a.data_parallel_size:
                raise ValueError(f"Invalid data_parallel_rank={hint}; local_engine_count={a.data_parallel_size}")
            rank = hint
        else:  # load-aware, as ATOM's default: the fewest requests in flight, ties round robin
            start = next(self.rr)
            with self.lock:
                rank = min(((self.inflight.get(r, 0), (r - start) % a.data_parallel_size, r)
                            for r in range(a.data_parallel_size)))[2]
        if a.max_model_len is not None and prompt_tokens + max_tokens > a.max_model_len:
            raise ValueError(f"prompt ({prompt_tokens} tokens) plus max_tokens ({max_tokens}) exceeds "
                             f"max_model_len ({a.max_model_len})")
        with self.lock:
            self.inflight[rank] = self.inflight.get(rank, 0) + 1
        reply = rank_call(rank, {"op": "forward", "prompt_tokens": prompt_tokens, "max_tokens": max_tokens,
                                 "delay_s": self.delay_s, "decode_s": float(self.server.get("decode_s_per_token", 0))})
        with self.lock:
            self.inflight[rank] -= 1
        if reply is None:
            while True:  # the rank is gone or stuck: the request never completes
                time.sleep(FOREVER)
        pace_until(arrived + self.first_token_s)

    def _usage(self, prompt_tokens: int, completion_tokens: int) -> dict:
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens}

    def _finish(self, gen: model.Generation) -> str:
        # /v1/completions passes the engine's reason through on current main; the image (and
        # chat everywhere) speaks OpenAI's stop/length.
        return gen.engine_reason or gen.finish_reason if self.api == "main" else gen.finish_reason

    def completion(self, body: dict) -> dict:
        prompt = body.get("prompt", "")
        prompt = prompt[0] if isinstance(prompt, list) else str(prompt)
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else stop
        max_tokens = int(body.get("max_tokens") or 16)
        n_prompt = len(model.tokenize(prompt))
        self.forward(body, n_prompt, max_tokens)
        gen = model.generate(prompt, max_tokens, self.faults, stop)
        lp = None
        if body.get("logprobs") and self.api != "main":  # CompletionRequest on main drops logprobs
            n = int(body["logprobs"])
            lp = {"tokens": gen.tokens, "token_logprobs": [x["logprob"] for x in gen.logprobs],
                  "top_logprobs": [dict(list(x["top"].items())[:n]) for x in gen.logprobs],
                  "text_offset": []}
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "text": gen.text, "logprobs": lp, "finish_reason": self._finish(gen)}],
                "usage": self._usage(n_prompt, len(gen.tokens))}

    def chat(self, body: dict) -> dict:
        msgs = body.get("messages") or []
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        prompt_tokens = sum(len(model.tokenize(str(m.get("content", "")))) for m in msgs if isinstance(m, dict))
        self.forward(body, prompt_tokens, max_tokens)
        gen = model.chat(msgs, max_tokens, self.faults, REASONING_TOKENS)
        msg = {"role": "assistant", "content": gen.content, "reasoning_content": gen.reasoning or None}
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": gen.finish_reason}],
                "usage": self._usage(prompt_tokens, gen.completion_tokens)}


def engine_kwargs(args: argparse.Namespace, env: dict) -> dict:
    # ATOM_TORCH_PROFILER_DIR is read by envs.py but overridden downstream on this image: only
    # the CLI flag reaches the engine (runbook, Profiling).
    return {"served_model_name": args.served_model_name, "tensor_parallel_size": args.tensor_parallel_size,
            "data_parallel_size": args.data_parallel_size, "max_model_len": args.max_model_len,
            "max_num_batched_tokens": args.max_num_batched_tokens, "max_num_seqs": args.max_num_seqs,
            "gpu_memory_utilization": args.gpu_memory_utilization, "torch_profiler_dir": args.torch_profiler_dir,
            "enable_expert_parallel": args.enable_expert_parallel, "fake_eplb": args.fake_eplb,
            "kv_cache_block_size": 16, "kv_cache_dtype": args.kv_cache_dtype,
            "compilation_config": CompilationConfig(3), "speculative_config": None}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    _RUN["port"] = args.server_port
    _, node, state = this_node()
    server = state["server"]
    env = dict(os.environ)
    if args.kv_cache_dtype is None or server.get("ignores_kv_cache_dtype_flag"):
        args.kv_cache_dtype = "auto"  # the engine's default (an image that no longer reads the flag)
    log = Log(env.get("ATOM_LOG_MORE", "0") not in ("", "0"))
    log(f"Engine kwargs: {engine_kwargs(args, env)}", where="model_engine/arg_utils.py:620", func="_get_engine_kwargs")
    children = []
    for local in range(args.data_parallel_size_local):
        rank = args.data_parallel_rank + local
        log(f"Creating EngineCore process: DP rank {rank}, will use GPUs {rank} to {rank}",
            where="model_engine/engine_core_mgr.py:954", func="launch_engine_core")
        pid = os.fork()
        if pid == 0:
            try:
                run_rank(rank, args, node, server, log, env)
            except BaseException:  # noqa: BLE001 - a sim bug must show in the log, not vanish
                log.raw(traceback.format_exc())
            finally:
                os._exit(0)
        children.append(pid)
    ranks = range(args.data_parallel_rank, args.data_parallel_rank + args.data_parallel_size_local)
    everyone = ranks if args.data_parallel_rank != 0 else range(args.data_parallel_size)
    while not all((atom_dir() / f"port-dp{r}").exists() for r in everyone):
        time.sleep(0.05)
    if args.data_parallel_rank != 0:
        log("Engine Core Mgr: all local EngineCores ready; this node computes only",
            where="model_engine/engine_core_mgr.py:299", func="__init__")
        while True:
            time.sleep(FOREVER)
    sim = SimServer(args, server)
    handler = type("Handler", (Api,), {"sim": sim})
    httpd = ThreadingHTTPServer((args.host, args.server_port), handler)
    httpd.daemon_threads = True
    log("Server started successfully and ready to accept requests")
    httpd.serve_forever()


if __name__ == "__main__":
    main()
