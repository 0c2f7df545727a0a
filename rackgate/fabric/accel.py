"""The rack-wide accelerator numbering and the fabric's kernel messages.

accel_id of GPU g on the node in tray t is gpus_per_node*(t-1)+g (4*(N-1)..+3 for node N). The
same number is amd-smi's ACCELERATOR_ID and the `AccId:<n>` of the fabric's dmesg lines, so a
failing importer's log names the remote node and GPU through this map.
"""
from __future__ import annotations

import re

from ..probes.dmesg import Hit, Pattern

# FAB-DMESG. Kernel formats as the runbook quotes them (amdgpu, importer side), and RCCL's
# warning (its own log, but the same family when it lands in a captured output).
FAB_DMESG: tuple[Pattern, ...] = (
    Pattern("NPA-RSP timeout", r"IMPORT: NPA-RSP timeout from remote AccId:\s*\d+"),
    Pattern("LSDMA PIO error", r"LSDMA PIO error status bits 0x[0-9a-fA-F]+"),
    Pattern("LSDMA PIO copy failed", r"LSDMA PIO failed to copy memory!"),
    Pattern("HELLO send failed", r"HELLO: Send failed to remote AccId:\s*\d+"),
    Pattern("IMPORT connection setup failed", r"IMPORT: connection setup failed with remote AccId:\s*\d+"),
    Pattern("XA import failed", r"IMPORT: XA import failed for handle:"),
    Pattern("RCCL HIP failure", r"NCCL WARN HIP failure 'invalid argument'"),
)
ACCID_RE = re.compile(r"AccId:\s*(\d+)")


def expected_accel_id(tray: int, gpu: int, gpus_per_node: int) -> int:
    return gpus_per_node * (tray - 1) + gpu


def accel_map(rack) -> dict[int, str]:
    """accel_id -> 'node/cardG' for every GPU the rack file lists."""
    return {expected_accel_id(n.tray, g, rack.gpus_per_node): f"{n.name}/card{g}"
            for n in rack.nodes for g in range(rack.gpus_per_node)}


def name_accids(text: str, amap: dict[int, str]) -> list[str]:
    """'AccId:5' in a line -> ['AccId:5 = node2/card1'] (or 'not in this rack')."""
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
