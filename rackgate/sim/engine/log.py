"""Every line the simulated ATOM server prints, in ATOM's formats.

The formats are taken from ATOM's source (atom/utils/__init__.py getLogger; the messages from
the modules each `where` names) and checked in docs/formats.md. `Log` writes a record in ATOM's
layout; `RankLog` holds the messages of one DP rank (EngineCore and ModelRunner); the
functions below are the node process's own messages.
"""
from __future__ import annotations

import os
import sys
import threading
import time

ATOM = "/app/ATOM/atom"
RCCL_VERSION = "2.27.7"


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


def _gb(x: float) -> str:
    return f"{x:.2f}GB"


# --- the node process (the one the suite launched) ------------------------------------------
def engine_kwargs(log: Log, kwargs: dict) -> None:
    log(f"Engine kwargs: {kwargs}", where="model_engine/arg_utils.py:620", func="_get_engine_kwargs")


def creating_engine_core(log: Log, rank: int) -> None:
    log(f"Creating EngineCore process: DP rank {rank}, will use GPUs {rank} to {rank}",
        where="model_engine/engine_core_mgr.py:954", func="launch_engine_core")


def computes_only(log: Log) -> None:
    log("Engine Core Mgr: all local EngineCores ready; this node computes only",
        where="model_engine/engine_core_mgr.py:299", func="__init__")


def server_started(log: Log) -> None:
    log("Server started successfully and ready to accept requests")


# --- one DP rank ----------------------------------------------------------------------------
MEGA_WIRE_RENAMED = ("RuntimeError: MEGA_WIRE was renamed to MEGA_DISPATCH_WIRE; update the launch script, "
                     "the old name is no longer read", "model_ops/fused_moe/mori_v2_prepare_finalize.py:88")


class RankLog:
    """The messages of DP rank `rank`: its EngineCore, its ModelRunner, and what the libraries
    it loads write."""

    def __init__(self, log: Log, rank: int):
        self.log, self.rank = log, rank

    def engine(self, msg: str, where: str = "model_engine/engine_core.py:172", func: str = "__init__",
               level: str = "INFO") -> None:
        self.log(msg, f"EngineCore-DP{self.rank}", where, func, level)

    def runner(self, msg: str, where: str = "model_engine/model_runner.py:1738", func: str = "get_num_blocks",
               level: str = "INFO") -> None:
        self.log(msg, "ModelRunner0/1", where, func, level)

    def rccl_version(self) -> None:
        self.log.raw(f"[aiter] load RCCL version: {RCCL_VERSION}")

    def megamoe(self, ep: int, experts: int, wire: str) -> None:
        self.runner(f"[MORI-V2] Created MegaMoE: ep_rank={self.rank if ep > 1 else 0} ep_size={ep} hidden=7168 "
                    f"inter=2048 experts={experts} topk=8 M=4096 act=silu gate=noaux_tc quant=fp4 pad=(0,0) "
                    f"swiglu_limit=None dispatch=mori wire={wire} "
                    "force_a8w4=False", "model_ops/fused_moe/mega_moe.py:211", "_get_mega_transport")

    def ready(self) -> None:
        self.engine("Engine Core: EngineCore fully initialized and ready")

    def memory_budget(self, total: float, free: float, utilization: float, budget: float, peak_torch: float,
                      non_torch: float, cudagraph: float, safety: float, available: float, blocks: int) -> None:
        self.runner(f"Memory budget: total_gpu={_gb(total)}, free={_gb(free)}, "
                    f"utilization={utilization}, budget={_gb(budget)}, "
                    f"peak_torch={_gb(peak_torch)}, non_torch={_gb(non_torch)}, "
                    f"cudagraph_est={_gb(cudagraph)}, safety={_gb(safety)}, "
                    f"available_for_kv={_gb(available)}, block_bytes=1179648, num_kvcache_blocks={blocks}")

    @staticmethod
    def kv_error(reserved: float, slots: int, available: float, utilization: float, need: float) -> str:
        """model_runner.get_num_blocks's per-request cache error (the exception's message)."""
        return (f"Per-request cache tensor ({reserved:.2f}GB for {slots} slots) exceeds available KV "
                f"budget ({available:.2f}GB) at --gpu-memory-utilization {utilization:.2f}. "
                f"Set --gpu-memory-utilization >= {min(need, 0.99):.2f} (this only zeroes out the deficit; use a "
                f"higher value for actual KV capacity) or reduce --max-num-seqs (currently {slots}).")

    def exception(self, exc_line: str, where: str, engine_msg: str | None = None) -> None:
        """run_engine logs an exception in the rank, with its traceback."""
        msg = engine_msg or exc_line.split(": ", 1)[-1]
        self.engine(f"run_engine: exception: {msg}", "model_engine/engine_core.py:243", "run_engine", "ERROR")
        path, _, lineno = where.partition(":")
        self.log.raw("Traceback (most recent call last):\n"
                     f'  File "{ATOM}/model_engine/engine_core.py", line 240, in run_engine\n'
                     f'  File "{ATOM}/{path}", line {lineno}, in get_num_blocks\n'
                     f"{exc_line}")

    def pinned_fallback(self) -> None:
        """atom/model_loader/expert_staging.py: a pinned host buffer that could not be allocated is
        logged at WARNING with torch's HIP error text (c10's message and its hint block, ending in a
        newline) and the loader goes on with pageable memory."""
        self.runner("Pinned staging alloc failed (HIP error: out of memory\n"
                    "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                    "below might be incorrect.\n"
                    "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
                    "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n"
                    "); using unpinned.", "model_loader/expert_staging.py:377", "_staging_buffer", "WARNING")

    def runtime_fatal(self, kind: str) -> None:
        """A runtime under the engine ends this rank, in that runtime's own words (docs/formats.md):
        PyTorch's ProcessGroupNCCL watchdog (c10 LOG(ERROR) behind torch's `[rankN]:` prefix),
        libstdc++'s terminate handler with the watchdog's DistBackendError; an RCCL error through
        torch's C10D_NCCL_CHECK, a HIP error through c10's check, Triton's OutOfResources, each
        raised into ATOM's run_engine."""
        r = self.rank
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime()) + f".{time.time_ns() % 10**9:09d}"
        work = ("WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 "
                "milliseconds before timing out.")
        if kind == "torch-watchdog":
            self.log.raw(f"[rank{r}]:[E{stamp} ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught collective "
                         f"operation timeout: {work}")
        elif kind == "cpp-terminate":
            self.log.raw("terminate called after throwing an instance of 'c10::DistBackendError'\n"
                         f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread "
                         f"terminated with exception: [Rank {r}] Watchdog caught collective operation timeout: "
                         f"{work}\n"
                         "Exception raised from ncclCommWatchdog at /app/pytorch/torch/csrc/distributed/c10d/"
                         "ProcessGroupNCCL.cpp:1903 (most recent call first):\n"
                         "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9c (0x7f3a in "
                         "/usr/local/lib/python3.12/dist-packages/torch/lib/libc10.so)")
        elif kind == "rccl-error":  # torch's C10D_NCCL_CHECK on an RCCL return code, raised into run_engine
            self.exception("torch.distributed.DistBackendError: NCCL error in: /app/pytorch/torch/csrc/distributed/"
                           "c10d/ProcessGroupNCCL.cpp:3356, unhandled cuda error (run with NCCL_DEBUG=INFO for "
                           "details), NCCL version 2.27.7", "model_ops/fused_moe/mori_v2_prepare_finalize.py:140")
        elif kind == "hip-error":  # c10_hip_check_implementation's text (first line), raised into run_engine
            self.exception("RuntimeError: HIP error: an illegal memory access was encountered",
                           "model_ops/attentions/mla.py:412")
        elif kind == "triton-oor":
            self.exception("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
                           "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.",
                           "model_ops/attentions/mla.py:412")
        elif kind == "aiter-jit-arch":  # aiter's JIT cannot compile a module for this arch (aiter/jit/core.py)
            self.aiter_jit_failed("module_mla_asm", "clang++: \x1b[31merror:\x1b[0m unsupported HIP gpu architecture: "
                                  "gfx1250")
            self.exception("RuntimeError: Error building extension 'module_mla_asm'", "model_ops/attentions/mla.py:96")
        elif kind == "rocblas-arch":  # rocBLAS's Tensile host finds no kernels for the arch, then aborts
            lib = "/opt/rocm/lib/rocblas/library"
            self.log.raw(f"rocBLAS error: Cannot read {lib}/TensileLibrary.dat: No such file or directory for GPU "
                         "arch : gfx1250\n List of available TensileLibrary Files : \n"
                         f'"{lib}/TensileLibrary_lazy_gfx942.dat"\n"{lib}/TensileLibrary_lazy_gfx950.dat"')
        else:
            raise ValueError(f"sim: unknown runtime fatal {kind!r}")

    def aiter_jit_failed(self, module: str, error: str) -> None:
        """aiter/jit/core.py's failed build: its tag (red) with ten arrows down, the build's history
        with every traceback line after `-->` and the compiler's output inside, the tag with arrows up."""
        aiter = "/usr/local/lib/python3.12/dist-packages/aiter"
        tag = f"\x1b[31mfailed jit build [{module}]\x1b[0m"
        self.log.raw(f"[aiter] start build [{module}] under {aiter}/jit/build/{module}\n"
                     f"[aiter] {tag}" + "\u2193" * 10 + "\n"
                     "-->[History]: Traceback (most recent call last):\n"
                     f'-->  File "{aiter}/jit/core.py", line 820, in wrapper\n'
                     "    module = get_module(md_name)\n"
                     f"-->Runtime\x1b[31merror:\x1b[0m Error building extension '{module}': [1/2] /opt/rocm/bin/hipcc "
                     f"-fPIC -std=c++20 -O3 --offload-arch=gfx1250 -c {aiter}/jit/build/{module}/blob/asm_mla.cu -o "
                     "asm_mla.cuda.o\n"
                     "FAILED: asm_mla.cuda.o\n"
                     f"{error}\n"
                     "ninja: build stopped: subcommand failed.\n\n"
                     f"{tag}" + "\u2191" * 10)

    def hotswap_installed(self) -> None:
        self.log.raw("[hsa-hotswap-rj] installed eager gfx1250 B0-to-A0 hook")

    def hotswap_translated(self) -> None:
        for i in range(121):
            self.log.raw(f"[hsa-hotswap-rj] eager translation source_id=fnv1a64:{i:016x} input_revision=b0 "
                         f"output_revision=a0 outcome=translated changed=23 translation_status=0")
        for _ in range(27):
            self.log.raw("[hsa-hotswap-rj] reused tier=aot input_bytes=501616 output_bytes=505712 status=0")

    def ca_comm_assert(self) -> None:
        self.log("Traceback (most recent call last):", "ModelRunner0/1", "model_engine/async_proc.py:133",
                 "busy_loop", "ERROR")
        self.log.raw('  File "/usr/local/lib/python3.12/dist-packages/aiter/dist/parallel_state.py", line 412, in all_gather\n'
                     "    assert not ca_comm.disabled\nAssertionError")

    def phi_assert(self) -> None:
        self.log.raw("python3: /root/.triton/llvm/llvm-project/llvm/include/llvm/IR/Instructions.h:2778: void "
                     "llvm::PHINode::setIncomingValue(unsigned int, llvm::Value*): Assertion `V && \"PHI node got "
                     "a null value!\"' failed.")

    def kv_full(self, load: int) -> None:
        self.engine(f"Engine {self.rank:03d}: prompt throughput: 0.0 tok/s, Running: {load}, KV usage: 98.6%",
                    "model_engine/scheduler.py:1502", "log_stats")

    def dp_sync_timeout(self) -> None:
        self.engine("Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms",
                    "model_engine/engine_core.py:711", "_sync_dp_state", "WARNING")
        self.engine("Engine Core: All DP ranks agreed to shutdown, exiting busy_loop",
                    "model_engine/engine_core.py:647", "busy_loop")
