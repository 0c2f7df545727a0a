"""The sim's model of the rack, as JSON on disk so the node executables can read it.

state.json holds every node's facts (modules, parameters, GPUs and their UALink attributes,
dmesg lines, containers) and the server's behaviour. Faults mutate this before it is rendered.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .engine.behaviour import ServerFaults
from .render import extensions

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


class StateError(ValueError):
    pass


@dataclass(frozen=True)
class ServerState:
    """The sim server's section of the state (state["server"]), typed. Areas set the healthy
    values (rackgate/sim/areas/srv.py, acc.py), faults change them (rackgate/sim/faults/)."""
    accuracy: float = 0.96  # the model's GSM8K accuracy (rackgate/sim/gsm8k.py)
    gsm8k_dir: str = ""  # the GSM8K data the model answers from
    api: str = "image"  # "image": the runbook image's HTTP behaviour; "main": current ATOM main
    silicon: str = "B0"  # what the sim's GPUs are ("A0" needs B0->A0 translation)
    store_entries: int = 1976  # translation-store entries of the rocjitsu prefix the hook finds
    step_s: float = 0.08  # seconds per boot phase
    image_extra_torch_gb: float = 0.0  # GB more peak torch memory per rank
    decode_s_per_token: float = 0.0  # seconds each generated token takes on a rank
    ignores_kv_cache_dtype_flag: bool = False  # the engine runs with kv_cache_dtype "auto"
    megamoe_experts: str = "global"  # "per_rank": the runbook image's MegaMoE expert count
    kv_budget_first: bool = False  # the runbook image logged the KV budget before its error
    faults: ServerFaults = field(default_factory=ServerFaults)  # named behaviours (engine/behaviour.py)

    @classmethod
    def from_json(cls, d: dict) -> ServerState:
        known = {f.name for f in dataclasses.fields(cls)} | {"rank_faults"}
        unknown = sorted(set(d) - known)
        if unknown:
            raise StateError(f"state.json server: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        plain = {k: v for k, v in d.items() if k not in ("faults", "rank_faults")}
        return cls(**plain, faults=ServerFaults.from_server(d))
