"""`amd-smi metric --throttle [--json]`: the violation (throttle) accumulators per GPU.

Keys and layout as ROCm/amdsmi prints them (CHANGELOG 6.3.0's example; amdsmi_cli `metric
--throttle`): a THROTTLE section with ACCUMULATION_COUNTER, <TYPE>_ACCUMULATED,
<TYPE>_VIOLATION_STATUS (ACTIVE / NOT ACTIVE) and <TYPE>_VIOLATION_ACTIVITY (%); JSON as
{"gpu_data": [{"gpu": N, "throttle": {...}}]}. The accumulation counter ticks once a millisecond
since the driver loaded; a GPU that is throttled on power since `ppt_since` (state: Gpu.ras
throttle) accumulates `ppt_fraction` of those ticks in PPT_ACCUMULATED.
"""
from __future__ import annotations

import json
import sys
import time

from . import json_out

SUBCOMMAND = "metric"
TYPES = ("prochot", "ppt", "socket_thermal", "vr_thermal", "hbm_thermal")


def throttle(g: dict, node: dict, now: float) -> dict:
    ticks = int((now - node["boot_time"]) * 1000)
    t = (g.get("ras") or {}).get("throttle") or {}
    acc = {k: 0 for k in TYPES}
    active = {k: False for k in TYPES}
    if t.get("ppt_since"):
        acc["ppt"] = int(max(0.0, now - t["ppt_since"]) * 1000 * t.get("ppt_fraction", 0.0))
        active["ppt"] = True
    out: dict = {"accumulation_counter": ticks}
    out.update({f"{k}_accumulated": acc[k] for k in TYPES})
    out.update({f"{k}_violation_status": "ACTIVE" if active[k] else "NOT ACTIVE" for k in TYPES})
    out.update({f"{k}_violation_activity": {"value": int(100 * t.get("ppt_fraction", 0.0)) if active[k] else 0,
                                            "unit": "%"} for k in TYPES})
    return out


def run(args: list[str], node: dict, state: dict) -> int:
    if "--throttle" not in args:
        print("amd-smi metric: only --throttle is simulated", file=sys.stderr)
        return 2
    now = time.time()
    gpus = [{"gpu": g["card"], "throttle": throttle(g, node, now)} for g in node["gpus"]]
    if json_out(args):
        print(json.dumps({"gpu_data": gpus}, indent=4))
        return 0
    for g in gpus:
        print(f"GPU: {g['gpu']}\n    THROTTLE:")
        for k, v in g["throttle"].items():
            shown = f"{v['value']} {v['unit']}" if isinstance(v, dict) else v
            print(f"        {k.upper()}: {shown}")
        print()
    return 0
