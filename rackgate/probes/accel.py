"""The rack-wide accelerator numbering and the fabric's kernel messages.

accel_id of GPU g on the node in tray t is gpus_per_node*(t-1)+g (4*(N-1)..+3 for node N). The
same number is amd-smi's ACCELERATOR_ID and the `AccId:<n>` of the fabric's dmesg lines, so a
failing importer's log names the remote node and GPU through this map.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..catalogue import Pattern, row
from .dmesg import Hit

if TYPE_CHECKING:
    from ..config.model import Rack
    from .drm import GpuMap

# FAB-DMESG: the catalogue row's signatures (rackgate/catalogue/fab.toml [[row.pattern]]).
FAB_DMESG: tuple[Pattern, ...] = row("FAB-DMESG").patterns
ACCID_RE = re.compile(r"AccId:\s*(\d+)")


def expected_accel_id(tray: int, gpu: int, gpus_per_node: int) -> int:
    return gpus_per_node * (tray - 1) + gpu


def accel_map(rack: Rack, cards: dict[str, GpuMap] | None = None) -> dict[int, str]:
    """accel_id -> 'node/gpuG' for every GPU the rack file lists; 'node/gpuG (cardN, BDF)' where
    `cards` ({node: rackgate.probes.drm.GpuMap}) holds the node's discovered cards."""
    def name(node: str, g: int) -> str:
        got = (cards or {}).get(node)
        if got is None or got.mismatch(rack.gpus_per_node):
            return f"{node}/gpu{g}"
        return got.where(g, rack.gpus_per_node)
    return {expected_accel_id(n.tray, g, rack.gpus_per_node): name(n.name, g)
            for n in rack.nodes for g in range(rack.gpus_per_node)}


def name_accids(text: str, amap: dict[int, str]) -> list[str]:
    """'AccId:5' in a line -> ['AccId:5 = node2/gpu1 (card1, 0000:15:00.0)'] (or 'not in this rack')."""
    out = []
    for m in ACCID_RE.finditer(text):
        n = int(m.group(1))
        out.append(f"AccId:{n} = {amap.get(n, 'not in this rack file')}")
    return out


def describe_hits(node: str, hits: list[Hit], amap: dict[int, str], limit: int = 6) -> list[str]:
    lines = []
    for h in hits[:limit]:
        named = name_accids(h.line.text, amap)
        lines.append(f"{node}: {h.line.raw.strip()}" + (f"  [{'; '.join(named)}]" if named else ""))
    if len(hits) > limit:
        lines.append(f"{node}: (+{len(hits) - limit} more)")
    return lines
