"""The sim's model of the rack, as JSON on disk so the node executables can read it.

state.json holds every node's facts (modules, parameters, GPUs and their UALink attributes,
dmesg lines, containers) and the server's behaviour. Faults mutate this before it is rendered.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

HEALTHY_PPOD = "0x5a1c0de0000000000000000000000001"
STATE_FILE = "state.json"


def healthy(nodes: int, gpus: int, accuracy: float) -> dict:
    boot = time.time() - 3600
    out = {"created": time.time(), "nodes": {}, "server": {"faults": [], "accuracy": accuracy}}
    for i in range(1, nodes + 1):
        name = f"node{i}"
        out["nodes"][name] = {
            "index": i - 1,
            "tray": i,
            "data_ip": f"127.0.{i}.1",
            "boot_time": boot,
            "modules": ["amdgpu", "ifoe", "amdxcp", "drm_buddy", "gpu_sched"],
            "kfd": True,
            "params": {"gpu_recovery": "0", "halt_if_hws_hang": "1", "mtype_local": "0", "noretry": "1"},
            "dmesg": [(0.0, "Linux version 6.8.0-60-generic (buildd@lcy02-amd64-098) #63-Ubuntu SMP")],
            "train_s": 0.0,
            "gpus": [
                {
                    "card": g,
                    "accel_state": "active",
                    "accel_id": 4 * (i - 1) + g,
                    "link_type": "ualink",
                    "ppod_id": HEALTHY_PPOD,
                    "vpod_id": "2",
                    "local_accels": " ".join(str(x) for x in reversed(range(gpus))),
                    "station_lane_en_bitmap": "0x0000ffff",
                    "hbm_gib": 432,
                    "stuck": False,
                }
                for g in range(gpus)
            ],
        }
    from .render import extensions
    for ext in extensions("healthy"):
        ext(out, gpus)
    return out


def node_dir() -> Path:
    """Inside a sim executable: this node's directory (set in the node's environment)."""
    return Path(os.environ["RACKGATE_SIM_NODE"])


def load(rack_dir: Path) -> dict:
    return json.loads((rack_dir / STATE_FILE).read_text())


def save(rack_dir: Path, state: dict) -> None:
    tmp = rack_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(rack_dir / STATE_FILE)


def this_node() -> tuple[str, dict, dict]:
    """(node name, node state, whole state) for the executable running now."""
    d = node_dir()
    state = load(d.parent)
    return d.name, state["nodes"][d.name], state
