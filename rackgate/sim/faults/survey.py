"""Faults of whole trays, for the survey (`rackgate survey`, `pytest -m survey`): a tray in another
fabric domain, a tray ssh cannot reach, a port the bring-up needs already held. (Busy, untuned and
stuck-link trays are the PLAT/FAB faults rack-busy, foreign-gpu-process, untuned-after-reboot,
params-default and stuck-link.)"""
from ..state import Reach
from . import fault

OTHER_PPOD = "5a1c0de0-0000-4000-8000-000000000002"   # %pU, like the healthy rack's pPod id
# A closed port on loopback: the system ssh client is refused there, and says so in its words.
UNREACHABLE = "ssh://root@127.0.0.1:1"


@fault("other-ppod", "FAB-POD", "the tray's links are trained in another pPod (another PPOD_ID): "
       "a different fabric domain", target="node", default="node4")
def _other_ppod(state, node):
    for g in state.nodes[node].gpus:
        g.ppod_id = OTHER_PPOD


@fault("tray-unreachable", "PLAT-FREE", "ssh to the tray is refused (the tray is down or its address "
       "changed): every check of it is 'could not observe'", target="node", default="node3")
def _unreachable(state, node):
    state.nodes[node].reach = Reach("ssh", UNREACHABLE)


@fault("port-held", "PLAT-FREE", "someone's server listens on the DP rendezvous port 29500 (the tray is "
       "in use without a container of its own)", target="node", default="node2")
def _port_held(state, node):
    state.nodes[node].listen = [*(state.nodes[node].listen or []), ["0.0.0.0", 29500]]
