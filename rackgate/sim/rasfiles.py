"""The GPUs' hardware error counters as the sim's nodes show them, in the kernel's formats
(docs/platform.md names the source of each): ras/<block>_err_count (or the ACA-era ras/aca_<block>),
ras/gpu_vram_bad_pages, ras/features, ras/version, ras/schema, ras/event_state,
aer_dev_correctable / aer_dev_fatal / aer_dev_nonfatal and pcie_replay_count under
/sys/class/drm/cardN/device. State: a GPU's `ras` (rackgate/sim/state.py Ras) as plain JSON.

Standard library only: the ubench07 stand-ins (rackgate/sim/ualoe.py) call `during("fabric")` at
every start, a rank of the sim server `during("serving load")` at its first forward pass; it
applies what the state says rises during that stage (a fault's rises, the healthy correctable
noise) and rewrites the files.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from . import drm, nodeview

# drivers/pci/pcie/aer.c aer_correctable_error_string / aer_uncorrectable_error_string (named bits).
AER_COR = ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF")
AER_UNCOR = ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
             "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr",
             "PoisonTLPBlocked")
AER = {"aer_dev_correctable": (AER_COR, "TOTAL_ERR_COR"), "aer_dev_fatal": (AER_UNCOR, "TOTAL_ERR_FATAL"),
       "aer_dev_nonfatal": (AER_UNCOR, "TOTAL_ERR_NONFATAL")}
PAGE_SIZE = 0x1000
SERVING = "serving load"  # the stage whose rises the sim server's ranks apply (rackgate/sim/engine/ranks.py)


# ras/event_state's event types (amdgpu_ras.c amdgpu_ras_sysfs_event_state_show, dump_event).
EVENTS = ("Fatal Error", "Poison Creation", "Poison Consumption")
TABLE_VERSION = 0x00021000  # ras/version: the bad page table's version (amdgpu_ras_eeprom.h RAS_TABLE_VER_V2_1)
SCHEMA = 0x5f  # ras/schema: the driver's RAS schema bits (an illustrative mask: only the format is the driver's)


def _err_count(counts: list[int], aca: bool = False) -> str:
    """amdgpu_ras_sysfs_read: "ue: N\nce: N\n", UMC also "de: N"; the ACA files
    (amdgpu_ras_aca_sysfs_read) print all three for every block."""
    names = ("ue", "ce", "de")
    counts = list(counts) + [0] * (3 - len(counts)) if aca else counts
    return "".join(f"{n}: {v}\n" for n, v in zip(names, counts))


def _event_state(events: dict) -> str:
    return "current seqno: {}\n".format(sum(events.values())) + "".join(
        f"{name}: count:{events.get(name, 0)}, last_seqno:{events.get(name, 0)}\n" for name in EVENTS)


def files(ras: dict) -> dict[str, str]:
    """Relative to cardN/device: path -> content."""
    out: dict[str, str] = {}
    if ras["ras_dir"]:
        aca = ras.get("layout") == "aca"
        for block, counts in ras["blocks"].items():
            out[f"ras/aca_{block}" if aca else f"ras/{block}_err_count"] = _err_count(counts, aca)
        out["ras/gpu_vram_bad_pages"] = "".join(
            f"0x{0x27f5d43 + 8 * i:08x} : 0x{PAGE_SIZE:08x} : {ras['bad_page_flag']}\n" for i in range(ras["bad_pages"]))
        out["ras/features"] = f"feature mask: 0x{ras['features']:x}\n"
        out["ras/version"] = f"table version: 0x{TABLE_VERSION:x}\n"
        out["ras/schema"] = f"schema: 0x{SCHEMA:x}\n"
        out["ras/event_state"] = _event_state(ras.get("events", {}))
    for name, (order, total) in AER.items():
        counts = ras["aer"].get(name, {})
        out[name] = "".join(f"{k} {counts.get(k, 0)}\n" for k in order) + f"{total} {sum(counts.values())}\n"
    out["pcie_replay_count"] = f"{ras['replay']}\n"
    return out


def write(root: Path, node: dict, gpu: dict) -> None:
    ras = gpu.get("ras")
    if ras is None:
        return
    dev = root / drm.card_dir(node, gpu["card"]) / "device"
    if (dev / "ras").is_dir() and (not ras["ras_dir"] or any(
            p.name not in files(ras) and p.is_file() for p in (dev / "ras").iterdir() if not p.name.endswith(".rg-tmp"))):
        shutil.rmtree(dev / "ras")  # RAS off, or the layout changed: no file of the other layout stays
    for rel, text in files(ras).items():
        p = dev / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".rg-tmp")
        tmp.write_text(text)
        tmp.replace(p)


def bump(ras: dict, counter: str, by: int) -> None:
    """counter: '<block>.ue|ce|de', 'aer_dev_*.<Name>', 'pcie_replay_count', 'bad_pages' or
    'throttle.ppt' (power throttling from now on, `by` percent of the time)."""
    if counter == "throttle.ppt":  # power throttling from now on, `by` percent of the time
        ras["throttle"] = {"ppt_since": time.time(), "ppt_fraction": by / 100}
        return
    if counter in ("pcie_replay_count", "bad_pages"):
        ras["replay" if counter == "pcie_replay_count" else "bad_pages"] += by
        return
    head, _, what = counter.partition(".")
    if head in AER:
        ras["aer"].setdefault(head, {})[what] = ras["aer"].get(head, {}).get(what, 0) + by
        return
    counts = ras["blocks"][head]
    counts[("ue", "ce", "de").index(what)] += by


def during(stage: str) -> None:
    """Inside a node executable: apply this node's rises for `stage` (once each, unless `every`)
    and the healthy correctable noise, then rewrite its counter files."""
    d = nodeview.node_dir()
    name, rack_dir = d.name, d.parent
    with nodeview.locked(rack_dir):
        st = nodeview.load(rack_dir)
        node = st["nodes"][name]
        changed = []
        for g in node["gpus"]:
            ras = g.get("ras")
            if ras is None:
                continue
            keep = []
            for r in ras.get("rises", []):
                if r["stage"] != stage:
                    keep.append(r)
                    continue
                if "kmsg" in r:  # kernel lines the stage's work makes the kernel log (an AER record)
                    t = time.time() - node["boot_time"]
                    node["dmesg"] += [[round(t + i * 1e-4, 6), line] for i, line in enumerate(r["kmsg"])]
                else:
                    bump(ras, r["counter"], r["by"])
                if r.get("every"):
                    keep.append(r)
            ras["rises"] = keep
            if ras["ras_dir"] and ras.get("noise") == stage and "umc" in ras["blocks"]:
                bump(ras, "umc.ce", 1)  # HBM correcting a bit now and then: healthy
            changed.append(g)
        nodeview.save(rack_dir, st)
    for g in changed:
        write(d / "root", node, g)
