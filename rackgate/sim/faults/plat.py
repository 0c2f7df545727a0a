"""PLAT faults: one node's platform."""
from . import fault


@fault("driver-not-loaded", "PLAT-DRIVER", "amdgpu not loaded and no /dev/kfd (blacklisted after a reboot)",
       target="node", default="node3")
def _driver(state, node):
    n = state["nodes"][node]
    n["modules"] = [m for m in n["modules"] if m not in ("amdgpu", "amdxcp", "drm_buddy", "gpu_sched")]
    n["kfd"] = False


@fault("params-default", "PLAT-PARAMS", "amdgpu loaded with default parameters (-1 0 -1 -1)",
       target="node", default="node2")
def _params(state, node):
    state["nodes"][node]["params"] = {"gpu_recovery": "-1", "halt_if_hws_hang": "0",
                                      "mtype_local": "-1", "noretry": "-1"}
