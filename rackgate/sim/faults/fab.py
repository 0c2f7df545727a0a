"""FAB faults: the fabric between nodes. Each reproduces its row's real signature (the strings and
values the real driver, amd-smi, ubench07 and NCCL print); rackgate/sim/areas/fab.py, the ubench
stand-ins (rackgate/sim/ualoe.py) and the sim's NCCL (rackgate/sim/nccl) act on them."""
from ..state import Background
from . import fault


@fault("stuck-link", "FAB-STATE", "a GPU's UALink stays 'unconfigured' (accel_id 4294967295, link_type invalid)",
       target="gpu", default="node2:1")
def _stuck(state, node, gpu):
    state.nodes[node].gpus[gpu].stuck = True


@fault("slow-training", "FAB-STATE", "links take a few seconds to train (healthy: must pass after the wait)",
       target="node", default="node1")
def _slow(state, node):
    state.nodes[node].train_s = 3.0


@fault("pod-mismatch", "FAB-POD", "one node reports a different VPOD_ID (the rendezvous would hang)",
       target="node", default="node4")
def _pod(state, node):
    for g in state.nodes[node].gpus:
        g.vpod_id = "3"


@fault("duplicate-accel-id", "FAB-ACCEL-ID", "a GPU reports its neighbour's accel_id (sysfs and amd-smi agree)",
       target="gpu", default="node3:2")
def _dup(state, node, gpu):
    gpus = state.nodes[node].gpus
    gpus[gpu].accel_id = gpus[gpu - 1 if gpu else 1].accel_id


@fault("partial-training", "FAB-TRAINING", "one card's station_lane_en_bitmap trained with fewer lanes than its peers",
       target="gpu", default="node2:3")
def _partial(state, node, gpu):
    state.nodes[node].gpus[gpu].station_lane_en_bitmap = "0x00000fff"


@fault("retrained-differently", "FAB-TRAINING", "every card of a node agrees, but not with the recorded healthy boot",
       target="node", default="node4")
def _retrained(state, node):
    for g in state.nodes[node].gpus:
        g.station_lane_en_bitmap = "0x000000ff"


@fault("stale-amdsmi-fabric", "FAB-UNPOPULATED", "the driver has a link bandwidth but amd-smi still prints "
       "BANDWIDTH: 0 Mb/s", target="node", default="node3")
def _stale_smi(state, node):
    n = state.nodes[node]
    for g in n.gpus:
        g.bandwidth = "400000"
    n.fabric.smi_bandwidth = 0


@fault("bad-tray", "FAB-P2P", "imports to/from a tray fail: [FATAL] ualoe_p2p.cpp:49 hipMemSetAccess(...) -> "
       "invalid argument, HELLO/IMPORT errors in the importer's dmesg", target="node", default="node2")
def _bad_tray(state, node):
    state.nodes[node].fabric.bad_tray = True


@fault("npa-timeout", "FAB-P2P", "a tray's fabric drops packets: the tools just sit (no RESULT line), "
       "IMPORT: NPA-RSP timeout in the importer's dmesg", target="node", default="node3")
def _npa(state, node):
    state.nodes[node].fabric.npa_timeout = True


@fault("fabric-dmesg", "FAB-DMESG", "the tools pass, but the tray's importer logs LSDMA PIO errors",
       target="node", default="node4")
def _lsdma(state, node):
    state.nodes[node].fabric.lsdma_errors = True


@fault("tcp-fallback", "FAB-BW", "MNNVL not in effect: every pair measures ~4.5 GB/s (TCP sockets)")
def _tcp(state):
    for n in state.nodes.values():
        n.fabric.tcp_fallback = True


@fault("leftover-listener", "FAB-LEFTOVER", "a ualoe_bw.exe listener from a dead peer is still running and holds "
       "the node's device memory (the next bw round fails silently)", target="node", default="node3")
def _leftover(state, node):
    state.background.append(
        Background(node, "exec ualoe_bw.exe listen -port=55560", {"RACKGATE_SIM_LEFTOVER": "1"}))


@fault("collective-hang", "FAB-COLLECTIVE", "the collective kernel never runs: ws=1 passes, ws 2/4 hang and the "
       "NCCL watchdog prints 'last completed NCCL work: -1'", target="node", default="node2")
def _hang(state, node):
    state.nodes[node].fabric.collective_hang = True


@fault("socket-transport", "FAB-TRANSPORT", "NCCL falls back to TCP: 'Using network Socket', 'via NET/Socket/0'")
def _socket(state):
    for n in state.nodes.values():
        n.fabric.transport = "NET/Socket"
