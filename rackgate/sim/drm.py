"""The sim's /sys/class/drm in the kernel's shape: cardN links into the PCI device tree, each
device linked to its bound driver (rackgate/probes/drm.py reads it).

    sys/class/drm/cardN -> ../../devices/pci0000:00/<port>/<bdf>/drm/cardN
    sys/devices/pci0000:00/<port>/<bdf>/drm/cardN/device -> ../../../<bdf>
    sys/devices/pci0000:00/<port>/<bdf>/driver -> ../../../../bus/pci/drivers/<driver>

A GPU sits below its own PCIe root port (`upstream_port`), as `readlink -f` of a real card's
device shows the bridges above it (the AER driver logs errors against either).

A node with the "bmc-card0" layout has a BMC's ASPEED video card (driver ast, with a VGA
connector) as card0; its GPUs are card1... GPU cards exist only while amdgpu is loaded.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

BMC_BDF = "0000:02:00.0"  # behind the BMC's PCIe bridge, before the GPUs in PCI order
BMC_VENDOR = "0x1a03"     # ASPEED Technology


def _get(node, key: str):
    return node.get(key) if isinstance(node, dict) else getattr(node, key)


def card_of(node, gpu: int) -> int:
    """The DRM card number of GPU `gpu` (sim state's Gpu.card) on a node (state Node or its JSON)."""
    return gpu + (1 if _get(node, "drm_layout") == "bmc-card0" else 0)


def default_bdf(gpu: int) -> str:
    return f"0000:{0x05 + 0x10 * gpu:02x}:00.0"


def upstream_port(gpu: int) -> str:
    """The PCIe root port above GPU `gpu` (one port per GPU)."""
    return f"0000:00:{0x01 + gpu:02x}.1"


def card_dir(node, gpu: int) -> str:
    """The node path of GPU `gpu`'s card, relative to the root: sys/class/drm/cardN."""
    return f"sys/class/drm/card{card_of(node, gpu)}"


def _link(path: Path, target: str) -> None:
    if path.is_symlink():
        if os.readlink(path) == target:
            return
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def lay_out_card(root: Path, card: int, bdf: str, driver: str, connectors: tuple[str, ...] = (),
                 port: str = "") -> None:
    """cardN of PCI device bdf (below the bridge `port`, if any) bound to driver, under root,
    linked as the kernel links it."""
    rel = f"{port}/{bdf}" if port else bdf
    up = "../" * rel.count("/")
    pci = root / "sys/devices/pci0000:00" / rel
    (pci / "drm" / f"card{card}").mkdir(parents=True, exist_ok=True)
    (root / "sys/bus/pci/drivers" / driver).mkdir(parents=True, exist_ok=True)
    _link(pci / "driver", f"../../../{up}bus/pci/drivers/{driver}")
    _link(pci / "drm" / f"card{card}" / "device", f"../../../{bdf}")
    _link(root / f"sys/class/drm/card{card}", f"../../devices/pci0000:00/{rel}/drm/card{card}")
    for c in connectors:
        (pci / "drm" / f"card{card}" / f"card{card}-{c}").mkdir(exist_ok=True)
        _link(root / f"sys/class/drm/card{card}-{c}", f"../../devices/pci0000:00/{rel}/drm/card{card}/card{card}-{c}")


def render(root: Path, node) -> None:
    """Lay out the node's DRM cards (before anything writes under cardN/device)."""
    (root / "sys/class/drm").mkdir(parents=True, exist_ok=True)
    if node.drm_layout == "bmc-card0":
        lay_out_card(root, 0, BMC_BDF, "ast", ("VGA-1",))
        dev = root / "sys/devices/pci0000:00" / BMC_BDF
        (dev / "vendor").write_text(f"{BMC_VENDOR}\n")
        (dev / "uevent").write_text(f"DRIVER=ast\nPCI_SLOT_NAME={BMC_BDF}\n")
    if "amdgpu" not in node.modules:
        return
    for g in node.gpus:
        lay_out_card(root, card_of(node, g.card), g.bdf or default_bdf(g.card), "amdgpu", port=upstream_port(g.card))
