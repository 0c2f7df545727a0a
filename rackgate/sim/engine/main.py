"""The simulated ATOM server's entry point: one process per node, launched with the runbook's flags.

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
import os
import signal
import sys
import time
import traceback
from http.server import ThreadingHTTPServer

from ..state import ServerState, this_node
from . import log as lines
from .log import Log
from .ranks import RUN, atom_dir, die_with_parent, hang, run_rank
from .routes import Api, SimServer


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
    ap.add_argument("--enable_prefix_caching", "--enable-prefix-caching", action=argparse.BooleanOptionalAction,
                    default=False)
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
    RUN["port"] = args.server_port
    _, node, state = this_node()
    server = ServerState.from_json(state["server"])
    env = dict(os.environ)
    if args.kv_cache_dtype is None or server.ignores_kv_cache_dtype_flag:
        args.kv_cache_dtype = "auto"  # the engine's default (an image that no longer reads the flag)
    log = Log(env.get("ATOM_LOG_MORE", "0") not in ("", "0"))
    lines.engine_kwargs(log, engine_kwargs(args, env))
    children = []
    for local in range(args.data_parallel_size_local):
        rank = args.data_parallel_rank + local
        lines.creating_engine_core(log, rank)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            die_with_parent(parent)
            try:
                run_rank(rank, args, node, server, log, env)
            except BaseException:  # noqa: BLE001 - a sim bug must show in the log, not vanish
                log.raw(traceback.format_exc())
            finally:
                os._exit(0)
        children.append(pid)
    oom = server.behaviours().on("oom_kill", args.data_parallel_rank)
    if oom:  # the kernel's OOM killer picks this node's process while its ranks load: SIGKILL, no last word
        time.sleep(oom.delay_s)
        os.kill(os.getpid(), signal.SIGKILL)
    ranks = range(args.data_parallel_rank, args.data_parallel_rank + args.data_parallel_size_local)
    everyone = ranks if args.data_parallel_rank != 0 else range(args.data_parallel_size)
    while not all((atom_dir() / f"port-dp{r}").exists() for r in everyone):
        time.sleep(0.05)
    if args.data_parallel_rank != 0:
        lines.computes_only(log)
        hang()
    sim = SimServer(args, server)
    handler = type("Handler", (Api,), {"sim": sim})
    # uvicorn's listen backlog is 2048: many prompts at once (SRV-SANITY's, a rack's DP size x 2)
    # must not be refused by a backlog of 5 (socketserver's default)
    server_cls = type("Server", (ThreadingHTTPServer,), {"request_queue_size": 2048})
    httpd = server_cls((args.host, args.server_port), handler)
    httpd.daemon_threads = True
    lines.server_started(log)
    httpd.serve_forever()
