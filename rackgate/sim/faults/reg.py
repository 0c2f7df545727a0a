"""REG faults: an image change that makes the rack slower without breaking any single check.

Each one moves a figure that the other areas' sim code produces, by less than those checks
tolerate and by more than the [regression] tolerance: only the comparison with a recorded
baseline (REG-FACTS) can see it, which is the point of `pytest -m regression`.

Sim knobs (state.server, typed as rackgate/sim/state.py ServerState, read by the sim server in
rackgate/sim/engine/ unless noted):
  image_extra_torch_gb  GB more peak torch memory per rank (the KV budget shrinks by as much)
  decode_s_per_token    seconds each generated token takes on a rank (TPOT)
  ignores_kv_cache_dtype_flag  the engine no longer reads --kv-cache-dtype (runs with "auto")
  step_s                seconds per boot phase (cold start; rackgate/sim/areas/srv.py)
  accuracy              the model's GSM8K accuracy (rackgate/sim/gsm8k.py)
  node.plat.atom["commit"]  the commit the node's ATOM checkout is at (rackgate/sim/areas/plat.py)
  node.fabric.collective_factor  the sim fabric's collective rate (rackgate/sim/nccl/sitecustomize.py)
"""
from . import Fault, declare, fault


@fault("slow-fabric", "REG-FACTS",
       "every node's fabric 20% slower after an image change: ubench07 GB/s stay above the floors and "
       "equal across pairs (FAB-BW passes), but drop against the baseline")
def _slow_fabric(state):
    # rackgate/sim/areas/fab.py: the sim's ualoe_bw.exe scales its table by each node's bw_factor.
    for n in state.nodes.values():
        n.fabric.bw_factor = 0.8


declare(
    Fault("smaller-kv", "REG-FACTS",
          "the new image holds 12 GB more torch memory per rank: available_for_kv and the KV block count drop "
          "~8% on every rank, still far above what the server needs (SRV-KV passes)",
          server={"image_extra_torch_gb": 12.0}),
    Fault("slower-decode", "REG-FACTS",
          "the new image decodes at 30 ms per token: TPOT rises (and with it per-request latency and the "
          "sim's TTFT, which its non-streaming benchmark derives from latency), throughput drops; every request "
          "still completes (BENCH-RESULT and BENCH-AGGREGATE, whose floor is the rack file's, pass)",
          server={"decode_s_per_token": 0.030}),
    Fault("kv-dtype-ignored", "REG-FACTS",
          "the new image's engine no longer reads --kv-cache-dtype: the same launch command now runs with "
          "kv_cache_dtype 'auto' instead of 'fp8' (Engine kwargs; SRV-ENGINE-ARGS, which judges the profiler dir, "
          "passes)", server={"ignores_kv_cache_dtype_flag": True}),
    Fault("slow-boot", "REG-FACTS",
          "the new image boots slower: each boot phase takes 3 s (cold start to ready ~9 s longer), still inside "
          "the boot budget and the stall limit (SRV-BOOT passes)", server={"step_s": 3.0}),
    Fault("shorter-answers", "REG-FACTS",
          "the new image reasons half as long before it answers (another default reasoning effort): the "
          "answers are as right as before (ACC-QUICK passes), output tokens per answer drop against the baseline",
          behaviours=("shorter-answers",)),
    Fault("lower-accuracy", "REG-FACTS",
          "the new image answers GSM8K less well: model accuracy 0.89 instead of 0.96; the 100-question "
          "rehearsal scores 0.94 instead of 0.98 (on the shared GSM8K and on the sim's generated set alike), "
          "above its pass mark 0.9221 (ACC-GSM8K passes) but 0.04 below the baseline, beyond the regression "
          "band (0.015) by more than one answer can move", server={"accuracy": 0.89}),
)


@fault("slower-collective", "REG-FACTS",
       "the new image's collectives run at half the bus bandwidth on every node: every all_reduce still sums "
       "correctly over the fabric (FAB-COLLECTIVE, FAB-TRANSPORT pass), but busbw halves against the baseline")
def _slower_collective(state):
    for n in state.nodes.values():
        n.fabric.collective_factor = 0.5


@fault("atom-changed", "REG-FACTS",
       "the new image carries another ATOM commit on every node (the same on all: PLAT-ATOM-COMMIT passes); "
       "the engine code changed under the same launch")
def _atom_changed(state):
    for n in state.nodes.values():
        n.plat.atom["commit"] = "a7c3e0d91b5f4c2e8d6a0b1c9e7f5d3a2b4c6e8f"


@fault("atom-commit-differs", "PLAT-ATOM-COMMIT",
       "one node's ATOM checkout is at another commit than the other nodes' (a different image build, or a "
       "tree changed by hand)", target="node", default="node4")
def _atom_commit_differs(state, node):
    state.nodes[node].plat.atom["commit"] = "0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e"
