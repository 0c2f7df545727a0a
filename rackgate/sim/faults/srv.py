"""SRV faults: the ATOM server. Each reproduces the real system's signature, by its real cause
where the sim can model the cause (a launch environment, a busy GPU, a dead worker)."""
from . import fault

SIM_ENV_KEY = "launch.env"


def _server(state, name: str) -> None:
    state["server"]["faults"].append(name)


def _rank_fault(state, name: str, **args) -> None:
    state["server"]["rank_faults"][name] = args


def _env(state, **changes) -> None:
    """Change the sim rack's launch environment (racks/sim.toml [launch.env]); None removes."""
    from ...config import load
    from ..rack import SHIPPED_RACK
    overrides = state.setdefault("rack_overrides", {})
    env = dict(overrides.get(SIM_ENV_KEY) or load(SHIPPED_RACK).launch.env)
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    overrides[SIM_ENV_KEY] = env


def _node_ranks(state, node: str) -> list[int]:
    n = state["nodes"][node]
    g = len(n["gpus"])
    return list(range(n["index"] * g, (n["index"] + 1) * g))


@fault("served-path", "SRV-MODELS", "launched without --served-model-name: /v1/models lists the model path")
def _served_path(state):
    from ..rack import SIM_LAUNCH
    state.setdefault("rack_overrides", {})["launch.command"] = SIM_LAUNCH.replace(
        " --served-model-name {served_model}", "")


@fault("api-main", "SRV-MODELS", "ATOM main's HTTP API: a wrong model name is a 400 with a detail message, "
       "/v1/completions reports the engine's finish reasons (healthy: everything passes)")
def _api_main(state):
    state["server"]["api"] = "main"


@fault("bang-tokens", "SRV-SANITY", "every generated token is '!' (A0 without B0->A0 translation)")
def _bang(state):
    _server(state, "bang-tokens")


@fault("mnnvl-off", "SRV-LAUNCH-LINT", "NCCL_MNNVL_ENABLE=0 in the launch env (RCCL silently falls back to TCP)")
def _mnnvl(state):
    _env(state, NCCL_MNNVL_ENABLE="0")


@fault("kv-rack-busy", "SRV-BOOT", "someone else's weights load on a node's GPUs while the server boots: a few seconds "
       "in, its ranks log `Per-request cache tensor ... exceeds available KV budget (-...GB)`",
       target="node", default="node2")
def _rack_busy(state, node):
    _rank_fault(state, "rack-busy", ranks=_node_ranks(state, node), delay_s=3.0, foreign_gb=180.0)


@fault("rendezvous-stall", "SRV-RENDEZVOUS", "one rank never returns from ncclCommInitRank: every rank stops after "
       "`load RCCL version`", target="node", default="node3")
def _rdv(state, node):
    _rank_fault(state, "rendezvous-stall", ranks=_node_ranks(state, node)[1:2])


@fault("small-hbm-batched", "SRV-KV", "288 GiB boards launched with --max-num-batched-tokens 16384: "
       "available_for_kv negative on every rank, the server never starts")
def _small_hbm(state):
    from ..rack import SIM_LAUNCH
    for n in state["nodes"].values():
        for g in n["gpus"]:
            g["hbm_gib"] = 288
    o = state.setdefault("rack_overrides", {})
    o["platform.hbm_gib"] = 288
    o["launch.command"] = SIM_LAUNCH.replace("--max-num-batched-tokens 2048", "--max-num-batched-tokens 16384")


@fault("max-model-len", "SRV-ENGINE-ARGS", "launched with --max-model-len 4096: the reasoning budget is capped, "
       "'max_model_len': 4096 in Engine kwargs")
def _max_len(state):
    from ..rack import SIM_LAUNCH
    state.setdefault("rack_overrides", {})["launch.command"] = SIM_LAUNCH.replace(
        " --max-num-seqs 8", " --max-model-len 4096 --max-num-seqs 8")


@fault("decode-mismatch", "SRV-CONSISTENCY", "the decode path picks another token than prefill at step 3 "
       "(fluent text, wrong kernel)")
def _decode(state):
    _server(state, "decode-mismatch")


@fault("rank-dead", "SRV-ALIVE", "a ModelRunner dies on its first request (`assert not ca_comm.disabled`) while "
       "HTTP and /health stay up", target="node", default="node3")
def _rank_dead(state, node):
    _rank_fault(state, "rank-dead", ranks=_node_ranks(state, node)[1:2])


@fault("longctx-phi", "SRV-LONGCTX", "a rank aborts on the LLVM `PHINode::setIncomingValue` assertion when a long "
       "chunked prefill runs at concurrency (PR #2380 missing)", target="node", default="node2")
def _phi(state, node):
    _rank_fault(state, "longctx-phi", ranks=_node_ranks(state, node)[2:3])


@fault("profiler-env", "SRV-PROFILE", "profiling asked with ATOM_TORCH_PROFILER_DIR instead of --torch-profiler-dir: "
       "/start_profile answers 200, no traces")
def _profiler_env(state):
    from ..rack import SIM_LAUNCH
    state.setdefault("rack_overrides", {})["launch.command"] = SIM_LAUNCH.replace(
        " --torch-profiler-dir /tmp/rackgate/profile", "")
    _env(state, ATOM_TORCH_PROFILER_DIR="/tmp/rackgate/profile")


@fault("dp-deadlock", "SRV-DEADLOCK", "one rank stops joining _sync_dp_state at 98.6% KV usage; the other ranks log "
       "`_sync_dp_state failed: Timed out waiting 1800000ms`", target="node", default="node3")
def _deadlock(state, node):
    _rank_fault(state, "dp-deadlock", ranks=_node_ranks(state, node)[3:4], kv_tokens=512, sync_timeout_s=1.0)


@fault("a0-empty-store", "SRV-TRANSLATION", "A0 silicon with the image's own rocjitsu prefix: the hook logs "
       "`installed eager` and translates nothing (every token '!')")
def _a0(state):
    state["server"]["silicon"] = "A0"
    state["server"]["store_entries"] = 170
    state.setdefault("rack_overrides", {})["silicon"] = "A0"
    _server(state, "bang-tokens")
