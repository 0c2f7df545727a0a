"""PCIe AER records of the kernel log (rackgate/probes/aer.py), judged per GPU for PLAT-DMESG.

An uncorrectable error (fatal or non-fatal) logged against a GPU or one of its upstream ports is a
finding on that GPU, even when the AER driver reports the recovery successful: the link dropped a
transaction the GPU needed. Correctable errors are counted per GPU and shown; only a storm
(more than platform.aer_storm_per_min within one minute of the printk clock) is a finding. Errors on
other devices are evidence, never charged to a GPU.
"""
from __future__ import annotations

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import aer
from ..probes.aer import GpuPath, Record


def findings(records: tuple[Record, ...], gpus: tuple[GpuPath, ...], rack: Rack) -> list[str]:
    limit = rack.platform.aer_storm_per_min
    out: list[str] = []
    corrected: dict[str, list[float]] = {}
    for r in records:
        for g, how in aer.charged(r, gpus):
            if r.uncorrectable:
                out.append(f"{g.label}: PCIe AER {r.describe()}" + (f" ({how})" if how else "")
                           + f" | {r.lines[0].strip()[:200]}")
            elif r.t is not None:
                corrected.setdefault(g.label, []).append(r.t)
    for label, times in corrected.items():
        n = aer.busiest_minute(times)
        if n > limit:
            out.append(f"{label}: a storm of correctable PCIe AER errors: {n} within one minute "
                       f"(allowed {limit:g}, platform.aer_storm_per_min), {len(times)} this boot")
    return out


def judge(records: tuple[Record, ...], gpus: tuple[GpuPath, ...], unlisted: str, rack: Rack, where: str) -> list[str]:
    """The AER findings; could-not-observe when there are records but the GPUs' PCI paths could
    not be listed (which GPU they name cannot be told)."""
    if records and not gpus and unlisted:
        raise CouldNotObserve(f"{where}: {len(records)} PCIe AER record(s) in the kernel log, but which GPU "
                              f"they name cannot be told: {unlisted}")
    return findings(records, gpus, rack)


def shown(records: tuple[Record, ...], gpus: tuple[GpuPath, ...]) -> str:
    """Every record with the GPU it is charged to, and each GPU's count of correctable ones."""
    lines = []
    counts: dict[str, int] = {}
    for r in records:
        to = aer.charged(r, gpus)
        names = ", ".join(g.label + (f" ({how})" if how else "") for g, how in to) or "no GPU"
        lines.append(f"{r.describe()}  -> {names}")
        if not r.uncorrectable:
            for g, _ in to:
                counts[g.label] = counts.get(g.label, 0) + 1
    lines += [f"{label}: {n} correctable AER error(s) this boot" for label, n in counts.items()]
    return "\n".join(lines)
