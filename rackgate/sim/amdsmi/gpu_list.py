"""`amd-smi list [--json]`: index, BDF, UUID and KFD ids of every GPU."""
from __future__ import annotations

import json

from . import json_out

SUBCOMMAND = "list"


def run(args: list[str], node: dict, state: dict) -> int:
    rows = []
    for g in node["gpus"]:
        accel = 4 * (node["tray"] - 1) + g["card"]
        rows.append({"gpu": g["card"], "bdf": g["bdf"],
                     "uuid": f"{0x5a1c:04x}{accel:04x}-0000-1000-80b0-{0x5a1c0de0 + accel:012x}",
                     "kfd_id": 40000 + 1000 * node["tray"] + g["card"], "node_id": 2 + g["card"],
                     "partition_id": 0})
    if json_out(args):
        print(json.dumps(rows, indent=4))
        return 0
    for r in rows:
        print(f"GPU: {r['gpu']}\n    BDF: {r['bdf']}\n    UUID: {r['uuid']}\n    KFD_ID: {r['kfd_id']}\n"
              f"    NODE_ID: {r['node_id']}\n    PARTITION_ID: {r['partition_id']}\n")
    return 0
