"""The simulated fabric: UALink attributes in their real formats, the amd-smi fabric view, the
fabric's behaviour under ubench07 and collectives, and the kernel messages it logs.

State: each GPU gets the driver's formats (link_type 'UALoE', ppod_id a UUID, local_accels the
node's own accelerator ids, bandwidth/latency 0 as this firmware leaves them); node["fabric"]
holds what faults change: {"bad_tray", "npa_timeout", "lsdma_errors", "bw_factor", "tcp_fallback",
"collective_hang", "transport", "smi_bandwidth"}. The stand-ins for ualoe_p2p.exe / ualoe_bw.exe
(rackgate/sim/tools) are real processes that meet through files under <rack>/ubench/, and log
kernel lines into the node's dmesg as the real fabric does (importer side only).
"""
from __future__ import annotations

import fcntl
import json
import time
from contextlib import contextmanager
from pathlib import Path

from .. import state as sim_state
from ..render import node_root
from ..state import Fabric, Node, Rack

HEALTHY_PPOD = "5a1c0de0-0000-4000-8000-000000000001"  # %pU of the pPod id (one fabric domain)
ZERO_PPOD = "00000000-0000-0000-0000-000000000000"
# The later runbook table (4-pair aggregate, 1 GB transfers): the healthy sim measures this.
HEALTHY_BW = {"read": 5772.0, "write": 6219.0, "bidir": 10942.0}
TCP_BW = {"read": 4.4, "write": 4.6, "bidir": 8.9}  # MNNVL not in effect: TCP sockets


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


def free_port_range(span: int) -> int:
    """A base port with base-1 .. base+span free right now."""
    from ...transport.ports import free_port  # here: the node tools import this module, and start-up counts
    return free_port("0.0.0.0", span=span, below=1)


def render(rack_dir: Path, name: str, node: Node) -> None:
    if "amdgpu" not in node.modules:
        return
    root = node_root(rack_dir, name)
    for g in node.gpus:
        ual = root / f"sys/class/drm/card{g.card}/device/ualink"
        ual.mkdir(parents=True, exist_ok=True)
        for attr in ("bandwidth", "latency"):
            (ual / attr).write_text(f"{getattr(g, attr) or '0'}\n")
    (rack_dir / "ubench").mkdir(exist_ok=True)


def training(stuck: bool, train_s: float) -> bool:
    """The link reads like the runbook's stuck boot: a stuck GPU, or a node whose links are still
    training (render.py's rule, shared by amd-smi)."""
    return stuck or train_s > 0


# --- the fabric's kernel log ----------------------------------------------------------------
@contextmanager
def _locked(rack_dir: Path):
    with open(rack_dir / "state.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def kernel_log(rack_dir: Path, node: str, lines: list[str]) -> None:
    """Append lines to a node's dmesg (printk time = seconds since its boot)."""
    with _locked(rack_dir):
        st = sim_state.load(rack_dir)
        n = st["nodes"][node]
        t = time.time() - n["boot_time"]
        for i, line in enumerate(lines):
            n["dmesg"].append([round(t + i * 1e-4, 6), line])
        sim_state.save(rack_dir, st)


def amdgpu_prefix(node: dict, card: int) -> str:
    bdf = node["gpus"][card].get("bdf") or f"0000:{0x05 + 0x10 * card:02x}:00.0"
    return f"amdgpu {bdf}: "


def node_by_ip(state: dict, ip: str) -> str | None:
    return next((n for n, v in state["nodes"].items() if v["data_ip"] == ip), None)


def accel_ids(node: dict) -> list[int]:
    return [g["accel_id"] for g in node["gpus"]]


# --- meeting point of the ubench stand-ins ---------------------------------------------------
def ubench_dir(rack_dir: Path) -> Path:
    d = rack_dir / "ubench"
    d.mkdir(exist_ok=True)
    return d


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def held(rack_dir: Path, node: str) -> int | None:
    """PID of a live ualoe_bw that holds this node's device memory (a leftover listener)."""
    for f in ubench_dir(rack_dir).glob(f"hold-{node}-*"):
        try:
            pid = int(f.name.rsplit("-", 1)[1])
        except ValueError:
            continue
        if Path(f"/proc/{pid}").exists():
            return pid
        f.unlink(missing_ok=True)
    return None
