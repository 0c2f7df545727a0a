"""SRV faults: the ATOM server. Each reproduces the real system's signature, by its real cause
where the sim can model the cause (a launch environment, a busy GPU, a dead worker).

The table is data: what each fault changes in the launch command (rackgate/sim/launch.py), the
launch environment, the server's settings, and the named behaviours the sim server's ranks and
routes consult (rackgate/sim/engine/behaviour.py).
"""
from ..launch import Drop, Set
from . import Fault, RankFault, declare, fault

declare(
    Fault("served-path", "SRV-MODELS", "launched without --served-model-name: /v1/models lists the model path",
          launch=(Drop("--served-model-name"),)),
    Fault("api-main", "SRV-MODELS", "ATOM main's HTTP API: a wrong model name is a 400 with a detail message, "
          "/v1/completions reports the engine's finish reasons (healthy: everything passes)",
          server={"api": "main"}),
    Fault("bang-tokens", "SRV-SANITY", "every generated token is '!' (A0 without B0->A0 translation)",
          behaviours=("bang-tokens",)),
    Fault("node-bang", "SRV-SANITY", "one node's ranks emit '!' for every token (that node launched without the "
          "B0->A0 translation or ATOM_USE_TRITON_MLA); the other nodes' ranks answer",
          target="node", default="node2", rank=RankFault("bang-ranks")),
    Fault("rank-bang", "SRV-SANITY", "a single DP rank emits '!' for every token (one GPU's numerics gone); every "
          "other rank answers", target="node", default="node3", rank=RankFault("bang-ranks", (1, 2))),
    Fault("rank-loop", "SRV-SANITY", "a single DP rank loops on one fragment (`BlockBlockBlock...`, one 'word' to "
          "a word count: tenstorrent/tt-xla #5892); every other rank answers", target="node", default="node3",
          rank=RankFault("loop-ranks", (1, 2))),
    Fault("node-empty", "SRV-SANITY", "one node's ranks answer HTTP 200 with no content at all; the other nodes' "
          "ranks answer", target="node", default="node4", rank=RankFault("empty-ranks")),
    Fault("rank-hung", "SRV-ALIVE", "a single DP rank accepts every request and never answers (stuck in a "
          "collective one participant never joined); /health stays 200, the other ranks answer",
          target="node", default="node3", rank=RankFault("hung-ranks", (1, 2))),
    Fault("node-hung", "SRV-ALIVE", "one node's ranks accept every request and never answer; the other nodes' "
          "ranks answer", target="node", default="node2", rank=RankFault("hung-ranks")),
    Fault("rank-drift", "SRV-GOLDEN", "one DP rank's logits are slightly off (a kernel that rounds otherwise, an "
          "HBM row): fluent text, the same first tokens, every chosen-token logprob 0.2 lower, a near-tie flipped "
          "at token 16", target="node", default="node3", rank=RankFault("drift-ranks", (1, 2))),
    Fault("node-drift", "SRV-GOLDEN", "one node's DP ranks compute slightly off (that node's kernels or launch): "
          "fluent text, logprobs moved, a later token flipped; the other nodes match the golden set",
          target="node", default="node2", rank=RankFault("drift-ranks")),
    Fault("image-drift", "SRV-GOLDEN", "every rank shifted alike (a new image's kernels round otherwise): fluent "
          "text, logprobs moved, a later token flipped, on every rank", behaviours=("logit-drift",)),
    Fault("batch-mixed-topk", "SRV-BATCH", "one node's ranks corrupt a greedy answer whose batch holds a request "
          "that sets top_k (the sampler's mixed path writing out of bounds: ROCm/aiter #5192): fluent text, a token "
          "changed early; alone, or beside other sampled requests, right", target="node", default="node2",
          rank=RankFault("mixed-topk-ranks")),
    Fault("batch-bucket", "SRV-BATCH", "one DP rank computes wrong when its decode batch runs in the graph of 4 "
          "requests (a tuned kernel wrong for one bucket: ROCm/aiter #3933); alone and at 2 or 8 right",
          target="node", default="node3", rank=RankFault("bucket-ranks", (2, 3), {"bucket": 4})),
    Fault("batch-cache", "SRV-BATCH", "launched with prefix caching on, one DP rank answers a prompt whose prefix "
          "it has cached otherwise than the first time (vllm #50702, tenstorrent/vllm #415)", target="node",
          default="node4", launch=(Set("--enable_prefix_caching"),), rank=RankFault("cache-ranks", (1, 2))),
    Fault("mnnvl-off", "SRV-LAUNCH-LINT", "NCCL_MNNVL_ENABLE=0 in the launch env (RCCL silently falls back to TCP)",
          env={"NCCL_MNNVL_ENABLE": "0"}),
    Fault("kv-rack-busy", "SRV-BOOT", "someone else's weights load on a node's GPUs while the server boots: a few "
          "seconds in, its ranks log `Per-request cache tensor ... exceeds available KV budget (-...GB)`",
          target="node", default="node2",
          rank=RankFault("rack-busy", args={"delay_s": 3.0, "foreign_gb": 180.0})),
    Fault("pinned-fallback", "SRV-BOOT", "healthy: a node's ranks cannot pin the expert loader's staging buffer "
          "and log ATOM's WARNING `Pinned staging alloc failed (HIP error: out of memory ...); using unpinned.` "
          "(torch's HIP hint block inside), then boot and serve", target="node", default="node2",
          rank=RankFault("pinned-fallback")),
    Fault("rt-torch-watchdog", "SRV-BOOT", "PyTorch's ProcessGroupNCCL watchdog times a collective out on one rank "
          "(`[rank9]:[E... ProcessGroupNCCL.cpp:629] [Rank 9] Watchdog caught collective operation timeout`)",
          target="node", default="node3", rank=RankFault("runtime-fatal", (1, 2), {"kind": "torch-watchdog"})),
    Fault("rt-cpp-terminate", "SRV-BOOT", "the watchdog's c10::DistBackendError reaches libstdc++'s terminate on one "
          "rank: `terminate called after throwing an instance of ...`, its rank only in the `what():` line under it",
          target="node", default="node3", rank=RankFault("runtime-fatal", (1, 2), {"kind": "cpp-terminate"})),
    Fault("rt-rccl-error", "SRV-BOOT", "an RCCL call fails on one rank: torch raises DistBackendError `NCCL error "
          "in: ...ProcessGroupNCCL.cpp:3356, unhandled cuda error` into its run_engine", target="node",
          default="node3", rank=RankFault("runtime-fatal", (1, 2), {"kind": "rccl-error"})),
    Fault("rt-hip-error", "SRV-BOOT", "a kernel faults on one rank: torch raises `HIP error: an illegal memory "
          "access was encountered` into its run_engine", target="node", default="node3",
          rank=RankFault("runtime-fatal", (1, 2), {"kind": "hip-error"})),
    Fault("rt-triton-oor", "SRV-BOOT", "a Triton kernel tuned for another GPU raises OutOfResources (shared "
          "memory) into one rank's run_engine", target="node", default="node3",
          rank=RankFault("runtime-fatal", (1, 2), {"kind": "triton-oor"})),
    Fault("rt-aiter-jit-arch", "SRV-BOOT", "aiter's JIT cannot build a kernel module for the GPU's arch on one rank: "
          "`failed jit build [module_mla_asm]` with `clang++: error: unsupported HIP gpu architecture: gfx1250` in its "
          "history, then `RuntimeError: Error building extension` into run_engine", target="node", default="node3",
          rank=RankFault("runtime-fatal", (1, 2), {"kind": "aiter-jit-arch"})),
    Fault("rt-rocblas-arch", "SRV-BOOT", "rocBLAS has no Tensile kernels for the GPU's arch on one node: `rocBLAS error: "
          "Cannot read .../TensileLibrary.dat: No such file or directory for GPU arch : gfx1250`, then the engine "
          "process aborts (exit 134)", target="node", default="node2",
          rank=RankFault("runtime-fatal", (0, 1), {"kind": "rocblas-arch"})),
    Fault("node-oom-kill", "SRV-BOOT", "the kernel's OOM killer ends one node's ATOM process while its ranks load: "
          "SIGKILL, no line of its own; the launch command exits 137", target="node", default="node2",
          rank=RankFault("oom-kill", None, {"delay_s": 1.0})),
    Fault("rendezvous-stall", "SRV-RENDEZVOUS", "one rank never returns from ncclCommInitRank: every rank stops "
          "after `load RCCL version`", target="node", default="node3",
          rank=RankFault("rendezvous-stall", (1, 2))),
    Fault("max-model-len", "SRV-ENGINE-ARGS", "launched with --max-model-len 4096: the reasoning budget is capped, "
          "'max_model_len': 4096 in Engine kwargs",
          launch=(Set("--max-model-len", "4096", before="--max-num-seqs"),)),
    Fault("decode-mismatch", "SRV-CONSISTENCY", "the decode path picks another token than prefill at step 3 "
          "(fluent text, wrong kernel)", behaviours=("decode-mismatch",)),
    Fault("stream-drop-first", "SRV-STREAM-CONSISTENCY", "a streamed completion loses its first token (the plain "
          "answer has it)", behaviours=("stream-drop-first",)),
    Fault("stream-repeat-first", "SRV-STREAM-CONSISTENCY", "a streamed completion sends its first token twice",
          behaviours=("stream-repeat-first",)),
    Fault("usage-over", "SRV-STREAM-CONSISTENCY", "usage.completion_tokens counts 3 tokens more than were generated "
          "(the text and finish_reason are right)", behaviours=("usage-over",)),
    Fault("rank-dead", "SRV-ALIVE", "a ModelRunner dies on its first request (`assert not ca_comm.disabled`) while "
          "HTTP and /health stay up", target="node", default="node3", rank=RankFault("rank-dead", (1, 2))),
    Fault("longctx-phi", "SRV-LONGCTX", "a rank aborts on the LLVM `PHINode::setIncomingValue` assertion when a "
          "long chunked prefill runs at concurrency (PR #2380 missing)", target="node", default="node2",
          rank=RankFault("longctx-phi", (2, 3))),
    Fault("longctx-corrupt", "SRV-LONGCTX", "one DP rank answers prompts past 4096 tokens corrupted: HTTP 200, "
          "fluent, the numbers wrong (vllm #46856: corruption past ~60k tokens)", target="node", default="node3",
          rank=RankFault("context-ranks", (1, 2), {"past_tokens": 4096})),
    Fault("profiler-env", "SRV-PROFILE", "profiling asked with ATOM_TORCH_PROFILER_DIR instead of "
          "--torch-profiler-dir: /start_profile answers 200, no traces",
          launch=(Drop("--torch-profiler-dir"),), env={"ATOM_TORCH_PROFILER_DIR": "/tmp/rackgate/profile"}),
    Fault("dp-deadlock", "SRV-DEADLOCK", "one rank stops joining _sync_dp_state at 98.6% KV usage; the other ranks "
          "log `_sync_dp_state failed: Timed out waiting 1800000ms`", target="node", default="node3",
          rank=RankFault("dp-deadlock", (3, 4), {"kv_tokens": 512, "sync_timeout_s": 1.0})),
    Fault("a0-empty-store", "SRV-TRANSLATION", "A0 silicon with the image's own rocjitsu prefix: the hook logs "
          "`installed eager` and translates nothing (every token '!')",
          server={"silicon": "A0", "store_entries": 170}, overrides={"silicon": "A0"}, behaviours=("bang-tokens",)),
)


@fault("small-hbm-batched", "SRV-KV", "288 GiB boards launched with --max-num-batched-tokens 16384: "
       "available_for_kv negative on every rank, the server never starts",
       overrides={"platform.hbm_gib": 288}, launch=(Set("--max-num-batched-tokens", "16384"),))
def _small_hbm(state):
    for n in state.nodes.values():
        for g in n.gpus:
            g.hbm_gib = 288
