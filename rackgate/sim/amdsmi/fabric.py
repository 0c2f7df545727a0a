"""`amd-smi fabric [--info] [--topology] [--json]`: UALoE info per GPU, as amdsmi_cli prints it.

Human-readable: "GPU: N" then 4-space levels, keys upper-cased; --json: a plain list of per-GPU
objects with {"value", "unit"} for bandwidth and latency; "N/A" where the library had nothing
(FABRIC_TELEMETRY on this firmware). This firmware leaves BANDWIDTH 0 Mb/s, LATENCY 0 ns and
VERSION 4294967295; the ids and state come from the same driver values as ualink sysfs.
"""
from __future__ import annotations

import json

from ..drm import card_dir
from ..fabwire import ZERO_PPOD, training
from ..nodeview import node_dir
from . import json_out

SUBCOMMAND = "fabric"
UNSET = 4294967295


def _active_rows(ids: list[int]) -> list[str]:
    slots = [str(i) for i in sorted(ids)] + ["-"] * (32 - len(ids))
    return [", ".join(slots[r * 8:(r + 1) * 8]) for r in range(4)]


def _sysfs(g: dict, node: dict) -> dict:
    """The driver's ualink attributes as rendered in this node's root (amd-smi reads the driver)."""
    d = node_dir() / "root" / card_dir(node, g["card"]) / "device/ualink"
    out = {}
    for attr in ("accel_state", "accel_id", "ppod_id", "vpod_id", "bandwidth", "latency"):
        try:
            out[attr] = (d / attr).read_text().strip()
        except OSError:
            out[attr] = None
    return out


def gpu_fabric(g: dict, node: dict, state: dict, as_json: bool) -> dict:
    drv = _sysfs(g, node)
    t = drv["accel_state"] == "unconfigured" if drv["accel_state"] is not None else training(g["stuck"], node.get("train_s", 0))
    smi_bw = node.get("fabric", {}).get("smi_bandwidth")
    bw = int(smi_bw if smi_bw is not None else drv["bandwidth"] or g.get("bandwidth", 0))
    lat = int(drv["latency"] or g.get("latency", 0))
    local = [int(x) for x in g["local_accels"].split()]
    everyone = [x["accel_id"] for n in state["nodes"].values() for x in n["gpus"]]
    info = {
        "bdf": g.get("bdf", "N/A"),
        "version": UNSET,
        "accelerator_id": UNSET if t else int(drv["accel_id"] or g["accel_id"]),
        "fabric_type": "UALOE",
        "bandwidth": {"value": bw, "unit": "Mb/s"} if as_json else f"{bw} Mb/s",
        "latency": {"value": lat, "unit": "ns"} if as_json else f"{lat} ns",
        "ppod_id": ZERO_PPOD if t else (drv["ppod_id"] or g["ppod_id"]),
        "ppod_size": 0 if t else len(everyone),
        "vpod_id": 0 if t else int(drv["vpod_id"] or g["vpod_id"]),
        "vpod_size": 0 if t else len(everyone),
        "local_accelerators": ", ".join(str(i) for i in local) or "N/A",
        "local_active_accelerators": _active_rows([] if t else everyone[:32]) if as_json
        else "\n".join(_active_rows([] if t else everyone[:32])),
        "addr_mode": "SOURCE_IDENTIFICATION",
        "accel_state": (drv["accel_state"] or g["accel_state"]).upper(),
    }
    return {"gpu": g["card"], "bdf": g.get("bdf", "N/A"), "fabric_info": info, "fabric_telemetry": "N/A"}


def _human(rec: dict) -> str:
    lines = [f"GPU: {rec['gpu']}", f"    BDF: {rec['bdf']}", "    FABRIC_INFO:"]
    for k, v in rec["fabric_info"].items():
        key = f"        {k.upper()}: "
        text = str(v).split("\n")
        lines.append(key + text[0])
        lines += [" " * len(key) + more for more in text[1:]]
    lines.append("    FABRIC_TELEMETRY: N/A")
    return "\n".join(lines)


def run(args: list[str], node: dict, state: dict) -> int:
    as_json = json_out(args)
    recs = [gpu_fabric(g, node, state, as_json) for g in node["gpus"]]
    if as_json:
        print(json.dumps(recs, indent=4))
    else:
        print("\n\n".join(_human(r) for r in recs) + "\n")
    return 0
