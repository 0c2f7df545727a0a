"""`amd-smi static [--asic] [--bus] [--vram] [--json]`: per-GPU static facts.

JSON as amd-smi 7.x prints it: {"gpu_data": [{"gpu": N, "asic": {...}, "bus": {...},
"vram": {...}}]} with indent 4; a value with a unit is {"value": N, "unit": "MB"}, an
unreadable one "N/A". VRAM size is in MB (MiB): a 432 GiB board reads 442368.
"""
from __future__ import annotations

import json

from . import json_out

SUBCOMMAND = "static"
SECTIONS = {"--asic": "asic", "-a": "asic", "--bus": "bus", "-b": "bus", "--vram": "vram", "-v": "vram"}


def gpu_static(g: dict, node: dict) -> dict:
    accel = node["tray"] * 4 + g["card"]
    return {
        "asic": {"market_name": "AMD Eng Sample", "vendor_id": "0x1002",
                 "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]", "subvendor_id": "0x1002",
                 "device_id": "0x75b0", "subsystem_id": "0x0b00", "rev_id": "0x00",
                 "asic_serial": f"0x{0x5A1C0DE000000000 + accel:016X}", "oam_id": g["card"],
                 "num_compute_units": 256, "target_graphics_version": "gfx1250"},
        "bus": {"bdf": g["bdf"], "max_pcie_width": 16, "max_pcie_speed": {"value": 32, "unit": "GT/s"},
                "pcie_interface_version": "Gen 5", "slot_type": "OAM"},
        "vram": {"type": "HBM", "vendor": "N/A", "size": {"value": int(g["hbm_gib"] * 1024), "unit": "MB"},
                 "bit_width": 8192},
    }


def run(args: list[str], node: dict, state: dict) -> int:
    want = [s for a, s in SECTIONS.items() if a in args] or ["asic", "bus", "vram"]
    gpus = []
    for g in node["gpus"]:
        full = gpu_static(g, node)
        gpus.append({"gpu": g["card"], **{k: full[k] for k in ("asic", "bus", "vram") if k in want}})
    if json_out(args):
        print(json.dumps({"gpu_data": gpus}, indent=4))
        return 0
    for g in gpus:
        print(f"GPU: {g['gpu']}")
        for section in ("asic", "bus", "vram"):
            if section not in g:
                continue
            print(f"    {section.upper()}:")
            for k, v in g[section].items():
                shown = f"{v['value']} {v['unit']}" if isinstance(v, dict) else v
                print(f"        {k.upper()}: {shown}")
        print()
    return 0
