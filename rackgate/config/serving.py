"""The ATOM server: how it is launched, and what the SRV and BENCH rows expect of it.

Every number here is an expectation with the runbook's validated value as its default; the
simulated rack (rackgate/sim/racks/sim.toml) scales the times to seconds.
"""
from pydantic import Field

from .base import Section


class Launch(Section):
    # The same command runs on every node inside the container. Placeholders filled per node:
    # {node} {node_index} {dp_start} {dp_local} {dp_size} {head_ip} {data_ip} {port} {served_model}.
    command: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    # Node that hosts the HTTP API (the first node when empty).
    head: str = ""
    port: int = Field(default=8000, ge=1, le=65535)
    # Where each node's log lands (on that node, inside the container); {node} is filled in.
    # ATOM runs one process per node whose DP-rank children share its stdout: one log per node.
    log_path: str = "/tmp/rackgate/atom-{node}.log"
    # A real rack cold-starts in up to 25 minutes (96 shards, translation, graph capture); the
    # boot watcher gives up at this budget, but a fatal line ends the wait at once.
    boot_budget_s: float = Field(default=1500.0, gt=0)
    # SRV-RENDEZVOUS: a node whose log has not moved for this long after `load RCCL version`
    # is stuck in ncclCommInitRank (not loading slowly).
    stall_limit_s: float = Field(default=600.0, gt=0)
    stop_grace_s: float = Field(default=30.0, gt=0)
    # Launch with ATOM_LOG_MORE=1 so every record names its process (EngineCore-DP<r>:<pid>):
    # that is what makes per-rank attribution of a shared node log possible. Logging only.
    rank_labels: bool = True
    # How often the boot watcher asks whether the launched processes are still alive.
    liveness_poll_s: float = Field(default=5.0, gt=0)
    # Ready is decided by the API: every ready_poll_s, /v1/models must list a model and
    # one tiny completion must return (whatever the engine logs).
    ready_poll_s: float = Field(default=2.0, gt=0)
    # After ATOM's ready line: how long the API may take to prove it serves.
    models_wait_s: float = Field(default=60.0, gt=0)
    # Lines of log kept around a fatal signature for the report.
    excerpt_lines: int = Field(default=12, ge=1)


class LintExpect(Section):
    # SRV-LAUNCH-LINT. The data-plane NIC (enp1s0f1 on the runbook's trays): any
    # NCCL/GLOO/MORI_SOCKET_IFNAME in the launch env must name it. Empty: not checked.
    data_plane_nic: str = "enp1s0f1"
    # True when the run is an accuracy run: --fake-eplb voids accuracy (router made uniform).
    accuracy_run: bool = True
    # PR #2380 applied to the image's ATOM (PLAT-PATCH-SIZE verifies it on the node).
    unfused_gather_patch: bool = True
    # --max-num-batched-tokens at or above this on boards of at most small_hbm_gib does not boot.
    batched_tokens_limit_small_hbm: int = Field(default=16384, gt=0)
    small_hbm_gib: float = Field(default=288.0, gt=0)


class BenchExpect(Section):
    # How long the benchmark command may run before the suite stops it.
    timeout_s: float = Field(default=3600.0, gt=0)
    # BENCH-RESULT: a run shorter than this measured nothing (the 404 run "completes" in <1 s).
    min_duration_s: float = Field(default=1.0, ge=0)
    # BENCH-AGGREGATE: relative tolerance between a reported per-GPU figure and ours.
    per_gpu_tolerance: float = Field(default=0.05, gt=0, lt=1)


class ServingExpect(Section):
    # Per-request HTTP timeout of the suite's client.
    request_timeout_s: float = Field(default=120.0, gt=0)
    # The hang rule of every request-sending check (rackgate/atom/perrank.py): once some requests
    # came back, those still in flight after max(hang_floor_s, hang_factor x the slowest answer
    # back) are hung -- a FAILED (SRV-DEADLOCK's), decided then, not at request_timeout_s.
    hang_floor_s: float = Field(default=30.0, gt=0)
    hang_factor: float = Field(default=10.0, ge=1)
    # SRV-SANITY prompts and their expected continuations (case-insensitive substring).
    sanity_prompts: dict[str, str] = Field(default_factory=lambda: {
        "The capital of France is": "paris",
        "1, 2, 3, 4, 5,": "6",
    })
    sanity_max_tokens: int = Field(default=16, gt=0)
    # SRV-SANITY asks every DP rank: this many prompts per rank (the rank named with ATOM's
    # data_parallel_rank hint), all at once, streamed. Attached without a rack file the DP size is
    # not known: sanity_requests_attached prompts, the server spreading them (ATOM: by load; 16 at
    # once reach each of a 16-rank server's ranks under least_requests, and fewer queued per rank
    # keep the slowest answer, and with it the hang bound, short: docs/performance.md, issue 34).
    sanity_per_rank: int = Field(default=2, ge=1)
    sanity_requests_attached: int = Field(default=16, ge=1)
    # After the first degenerate answer, how long the others may take to come back (the share):
    # this, or as long again as the first answer took when that is longer (a loaded server).
    sanity_settle_s: float = Field(default=2.0, ge=0)
    # Near-uniform logprobs: the mean top-1 probability below this means noise, not a model.
    min_top1_prob: float = Field(default=0.05, gt=0, lt=1)
    # SRV-GOLDEN: the golden set (rackgate/baseline/golden_prompts.toml, versioned) asked of every
    # DP rank greedily, golden_max_tokens each, with the top golden_top_k logprobs of every
    # position where the server returns them; at most golden_concurrency requests at once (the
    # comparison asks at the concurrency the golden set was recorded at). Attached without a rack
    # file: each prompt golden_repeats_attached times, the server spreading them. golden = false:
    # the rack file says the golden comparison does not apply (SKIPPED).
    golden: bool = True
    golden_max_tokens: int = Field(default=32, gt=0)
    golden_top_k: int = Field(default=5, ge=1, le=20)
    golden_concurrency: int = Field(default=16, ge=1)
    golden_repeats_attached: int = Field(default=4, ge=1)
    # The band an answer may move from its golden recording (docs/serving.md: the measurements):
    # the largest of these floors and golden_noise x what repeated healthy recordings moved.
    golden_logprob_tol: float = Field(default=0.1, ge=0)  # max |delta logprob| of the chosen token
    golden_kl_tol: float = Field(default=0.01, ge=0)      # KL(golden || now) over the top-k, per position
    golden_noise: float = Field(default=3.0, ge=1)
    # SRV-BATCH (docs/serving.md): every DP rank asked the batch_prompts greedily (batch_max_tokens,
    # the top golden_top_k logprobs) alone, then inside batches of every decode batch-size bucket up
    # to batch_concurrency requests on the rank (powers of two, with the launch command's
    # --cudagraph-capture-sizes and batch_capture_sizes up to it), mixed with sampled requests
    # (top_k, top_p, temperature, logprobs, another max_tokens, a stop string), and with the prompt
    # cached (the same prompt again; one of batch_prefix_words words). Answers within the golden
    # band's floors (golden_logprob_tol, golden_kl_tol) of the rank's own answer alone.
    # batch = false: the rack file says it does not apply (SKIPPED).
    batch: bool = True
    batch_prompts: list[str] = Field(default_factory=lambda: ["The capital of France is", "1, 2, 3, 4, 5,"],
                                     min_length=1)
    batch_max_tokens: int = Field(default=16, gt=1)
    batch_concurrency: int = Field(default=16, ge=2)
    batch_capture_sizes: list[int] = Field(default_factory=list)
    batch_prefix_words: int = Field(default=256, ge=0)
    # Each prompt begins with a tag of the session's own, so its first ask (the reference) is a
    # prefix-cache miss whatever earlier sessions asked; false: the prompts exactly as written.
    batch_tag: bool = True
    # SRV-CONSISTENCY: prompts decoded greedily, then re-prefilled with the decoded prefix.
    consistency_prompts: list[str] = Field(default_factory=lambda: [
        "The capital of France is", "1, 2, 3, 4, 5,", "The opposite of hot is"])
    consistency_max_tokens: int = Field(default=12, gt=1)
    # How many decoded positions are re-checked by prefill (each is one request).
    consistency_positions: int = Field(default=4, ge=1)
    # SRV-STREAM-CONSISTENCY: the served model's tokenizer on this machine (a tokenizer.json, or
    # the model folder holding one), to count the tokens of an answer. Empty: the usage count
    # cannot be checked (could not observe). The prompts are asked streamed and not, greedily.
    tokenizer: str = ""
    stream_prompts: list[str] = Field(default_factory=lambda: ["The capital of France is", "1, 2, 3, 4, 5,"])
    stream_max_tokens: int = Field(default=16, gt=1)
    # SRV-KV: available_for_kv must exceed this on every rank (GB as ATOM prints it).
    min_available_kv_gb: float = 0.0
    # SRV-KV: the model's routed experts (Kimi-K3: 896) and the EP size (0: the DP size, nodes x
    # gpus_per_node, as launched with --enable-expert-parallel -tp 1). `[MORI-V2] Created MegaMoE:
    # ... experts=N` is accepted as the global count (current ATOM) or model_experts / ep_size
    # (the runbook's image: 56 at EP16). model_experts 0: not checked.
    model_experts: int = Field(default=896, ge=0)
    ep_size: int = Field(default=0, ge=0)
    # An extra per-rank figure to accept (0: only the two derived above).
    experts_per_rank: int = Field(default=0, ge=0)
    # SRV-ENGINE-ARGS / SRV-PROFILE: the profiler directory given with --torch-profiler-dir
    # (inside the container). Empty: profiling not asked for, SRV-PROFILE does not apply.
    profile_dir: str = ""
    # SRV-PROFILE: the little load between /start_profile and /stop_profile, and how long the
    # trace files may take to appear afterwards.
    profile_requests: int = Field(default=4, ge=1)
    profile_wait_s: float = Field(default=120.0, gt=0)
    # SRV-ALIVE: the bound of the one request routed to each DP rank.
    alive_timeout_s: float = Field(default=120.0, gt=0)
    # SRV-LONGCTX: prompt length as a multiple of --max-num-batched-tokens, and concurrency;
    # longctx_words > 0 sets the length in words instead (a model with fewer positions than
    # 3 x ATOM's default chunk, 49152: the self-tests' 8192-position engine).
    longctx_multiple: float = Field(default=3.0, gt=1)
    # The model's length in tokens (prompt + answer) the server serves: SRV-LONGCTX's prompts are
    # sized to fit it. 0: the launch command's --max-model-len, else the server's /v1/models
    # `max_model_len` (vLLM publishes it; ATOM's model card does not), else not known (unsized).
    max_model_len: int = Field(default=0, ge=0)
    longctx_words: int = Field(default=0, ge=0)
    longctx_concurrency: int = Field(default=4, ge=1)
    longctx_timeout_s: float = Field(default=900.0, gt=0)
    # SRV-DEADLOCK: the load sent, and how long throughput may stand still before the logs are
    # read for `_sync_dp_state failed` (a real DP-sync timeout is 1800 s).
    deadlock_requests: int = Field(default=8, ge=1)
    deadlock_window_s: float = Field(default=1800.0, gt=0)
    # SRV-TRANSLATION (A0 only): translations and tier reuses every healthy A0 run shows.
    min_translated: int = Field(default=300, ge=0)
    min_reused: int = Field(default=100, ge=0)
    bench: BenchExpect = Field(default_factory=BenchExpect)
    lint: LintExpect = Field(default_factory=LintExpect)
