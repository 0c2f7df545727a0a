"""FAB-DATACHECK faults: the data a collective carries, as the sim's transport carries it
(rackgate/sim/nccl/sitecustomize.py acts on node.fabric: corrupt, wrong_peer, drop_link), whoever
calls the collective."""
from . import fault

CORRUPT_ABOVE = 16384  # bytes: the sim rack's data check runs 2 KiB and 32 KiB (rackgate/sim/racks/sim.toml)
LATE_AFTER = 2  # calls of a collective at one size that arrive right before the corruption starts


@fault("gpu-corrupts-large", "FAB-DATACHECK", f"what lands on one GPU in a collective above {CORRUPT_ABOVE} bytes "
       "arrives with a run of wrong elements (smaller messages arrive right)", target="gpu", default="node2:1")
def _large(state, node, gpu):
    state.nodes[node].fabric.corrupt[str(gpu)] = {"above": CORRUPT_ABOVE, "after": 0}


@fault("gpu-corrupts-late", "FAB-DATACHECK", f"one GPU receives right data for {LATE_AFTER} iterations, then wrong "
       "elements in every collective (MoRI dispatch/combine faulting only after many iterations)",
       target="gpu", default="node3:2")
def _late(state, node, gpu):
    state.nodes[node].fabric.corrupt[str(gpu)] = {"above": 0, "after": LATE_AFTER}


@fault("wrong-peer", "FAB-DATACHECK", "one GPU's all_to_all sends the tokens meant for rank d+1 to rank d "
       "(a wrong rank map, as gpu_per_node off by one)", target="gpu", default="node4:0")
def _wrong_peer(state, node, gpu):
    state.nodes[node].fabric.wrong_peer.append(gpu)


def drop_peer(state, node: str, gpu: int) -> tuple[str, int]:
    """The far end of the link `link-drops` cuts: two nodes on (the other half of the rack), the next GPU."""
    names = list(state.nodes)
    far = names[(names.index(node) + max(1, len(names) // 2)) % len(names)]
    return far, (gpu + 1) % len(state.nodes[far].gpus)


@fault("link-drops", "FAB-DATACHECK", "the link between one GPU and one GPU of another node drops its traffic: "
       "every collective holding both hangs (each passes with anyone else)", target="gpu", default="node1:3")
def _drop(state, node, gpu):
    far, g = drop_peer(state, node, gpu)
    state.nodes[node].fabric.drop_link.setdefault(str(gpu), []).append(f"{far}/gpu{g}")
    state.nodes[far].fabric.drop_link.setdefault(str(g), []).append(f"{node}/gpu{gpu}")
