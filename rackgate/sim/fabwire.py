"""The fabric as the sim's node executables see it (amd-smi fabric, ualoe_p2p.exe, ualoe_bw.exe):
link training, the fabric's kernel log, and the meeting point of the ubench07 stand-ins. The
build side (healthy facts, rendered files) is rackgate/sim/areas/fab.py. Standard library only:
these executables start thousands of times per self-test run.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from . import nodeview

ZERO_PPOD = "00000000-0000-0000-0000-000000000000"
# The later runbook table (4-pair aggregate, 1 GB transfers): the healthy sim measures this.
HEALTHY_BW = {"read": 5772.0, "write": 6219.0, "bidir": 10942.0}
TCP_BW = {"read": 4.4, "write": 4.6, "bidir": 8.9}  # MNNVL not in effect: TCP sockets


def training(stuck: bool, train_s: float) -> bool:
    """The link reads like the runbook's stuck boot: a stuck GPU, or a node whose links are still
    training (render.py's rule, shared by amd-smi)."""
    return stuck or train_s > 0


# --- the fabric's kernel log ----------------------------------------------------------------
def kernel_log(rack_dir: Path, node: str, lines: list[str]) -> None:
    """Append lines to a node's dmesg (printk time = seconds since its boot)."""
    with nodeview.locked(rack_dir):
        st = nodeview.load(rack_dir)
        n = st["nodes"][node]
        t = time.time() - n["boot_time"]
        for i, line in enumerate(lines):
            n["dmesg"].append([round(t + i * 1e-4, 6), line])
        nodeview.save(rack_dir, st)


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
