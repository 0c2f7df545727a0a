"""FAB faults: the fabric between nodes."""
from . import fault


@fault("stuck-link", "FAB-STATE", "a GPU's UALink stays 'unconfigured' (accel_id 4294967295, link_type invalid)",
       target="gpu", default="node2:1")
def _stuck(state, node, gpu):
    state["nodes"][node]["gpus"][gpu]["stuck"] = True


@fault("slow-training", "FAB-STATE", "links take a few seconds to train (healthy: must pass after the wait)",
       target="node", default="node1")
def _slow(state, node):
    state["nodes"][node]["train_s"] = 3.0


@fault("pod-mismatch", "FAB-POD", "one node reports a different VPOD_ID (the rendezvous would hang)",
       target="node", default="node4")
def _pod(state, node):
    for g in state["nodes"][node]["gpus"]:
        g["vpod_id"] = "3"
