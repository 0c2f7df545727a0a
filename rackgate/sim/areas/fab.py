"""The simulated fabric: UALink attributes in their real formats, the amd-smi fabric view, the
fabric's behaviour under ubench07 and collectives, and the kernel messages it logs.

State: each GPU gets the driver's formats (link_type 'UALoE', ppod_id a UUID, local_accels the
node's own accelerator ids, bandwidth/latency 0 as this firmware leaves them); node["fabric"]
holds what faults change: {"bad_tray", "npa_timeout", "lsdma_errors", "bw_factor", "tcp_fallback",
"collective_hang", "transport", "smi_bandwidth"}. The stand-ins for ualoe_p2p.exe / ualoe_bw.exe
(rackgate/sim/tools) are real processes that meet through files under <rack>/ubench/, and log
kernel lines into the node's dmesg as the real fabric does (importer side only): their half of
the fabric is rackgate/sim/fabwire.py (standard library only: they start thousands of times).
"""
from __future__ import annotations

from pathlib import Path

from .. import drm
from ..render import node_root
from ..state import Fabric, Node, Rack

HEALTHY_PPOD = "5a1c0de0-0000-4000-8000-000000000001"  # %pU of the pPod id (one fabric domain)


def healthy(state: Rack, gpus: int) -> None:
    for n in state.nodes.values():
        ids = [4 * (n.tray - 1) + g for g in range(gpus)]
        for g in n.gpus:
            g.link_type = "UALoE"
            g.ppod_id = HEALTHY_PPOD
            g.local_accels = " ".join(str(i) for i in reversed(ids))
            g.bandwidth = "0"  # this firmware does not populate them
            g.latency = "0"
        n.fabric = Fabric()
    # All sim nodes share this machine's loopback, and sims run side by side (the fault matrix):
    # each sim's collectives get ports of their own (node i's worlds base+10i+w, across base-1).
    state.rack_overrides["fabric.collective_port"] = free_port_range(10 * len(state.nodes) + 10)
    state.rack_overrides["fabric.datacheck_port"] = free_port_range(64)  # FAB-DATACHECK: a port per pass


def free_port_range(span: int) -> int:
    """A base port with base-1 .. base+span free right now."""
    from ...transport.ports import free_port  # here: the node tools import this module, and start-up counts
    return free_port("0.0.0.0", span=span, below=1)


def render(rack_dir: Path, name: str, node: Node) -> None:
    if "amdgpu" not in node.modules:
        return
    root = node_root(rack_dir, name)
    for g in node.gpus:
        ual = root / drm.card_dir(node, g.card) / "device/ualink"
        ual.mkdir(parents=True, exist_ok=True)
        for attr in ("bandwidth", "latency"):
            (ual / attr).write_text(f"{getattr(g, attr) or '0'}\n")
    (rack_dir / "ubench").mkdir(exist_ok=True)
