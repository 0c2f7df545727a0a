"""The kernel log (dmesg), per node: parsed lines, time windows, and the catalogue's patterns.

`dmesg` prints the kernel ring buffer, which holds the current boot only, one line per record:

    [  312.441907] amdgpu 0000:05:00.0: amdgpu: MES(0, 0) failed to respond to msg=REMOVE_QUEUE

The bracket is seconds since boot (the printk clock). A time window is expressed in that clock:
take `cursor(host)` (the newest line's timestamp) before the work, then
`read_dmesg(host, since_monotonic=cursor)` returns only what the kernel logged after it. No
wall clock is involved, so a skewed or NTP-stepped node clock cannot shift the window.

Pattern lists are data: PLAT_DMESG and PLAT_WEDGED here; other areas (FAB-DMESG) define their
own and use the same `match`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..report.verdict import CouldNotObserve
from ..transport import Host

_LINE = re.compile(r"^\[\s*(\d+\.\d+)\]\s?(.*)$")
# "amdgpu 0000:05:00.0: ..." -> driver, PCI address
_DEVICE = re.compile(r"^(\S+) ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): ")


@dataclass(frozen=True)
class KmsgLine:
    t: float | None  # seconds since boot; None when the kernel prints no timestamps
    text: str        # the message without the timestamp
    raw: str         # the line as dmesg printed it

    @property
    def device(self) -> str | None:
        """The PCI address a driver message names (amdgpu 0000:05:00.0: ...), if any."""
        m = _DEVICE.match(self.text)
        return m.group(2).lower() if m else None

    @property
    def driver(self) -> str | None:
        m = _DEVICE.match(self.text)
        return m.group(1) if m else None


@dataclass(frozen=True)
class Pattern:
    name: str   # what a person calls it (shown in the failure)
    regex: str

    def search(self, text: str) -> bool:
        return re.search(self.regex, text) is not None


@dataclass(frozen=True)
class Hit:
    line: KmsgLine
    patterns: tuple[str, ...]  # names of every pattern the line matched


# PLAT-DMESG: a node that is not healthy even at 0% VRAM. Kernel formats (amdgpu):
#   "[gfxhub] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32772)"  (gmc)
#   "\t Faulty UTCL2 client ID: TCP (0x8)"                                  (gfxhub *_print_l2_protection_fault_status)
#   "MES ring buffer is full."                                              (mes_v1x)
#   "ring sdma0 timeout, signaled seq=1201, emitted seq=1203"               (amdgpu_job_timedout)
#   "Fence fallback timer expired on ring sdma0"                            (amdgpu_fence)
#   "GPU reset begin!" / "GPU reset(2) succeeded!" / "GPU reset(2) failed"  (amdgpu_device)
# ("MES might be in unrecoverable state, issue a GPU reset" asks for a reset that gpu_recovery=0
#  never performs: that node is PLAT-WEDGED's, not a reset.)
PLAT_DMESG: tuple[Pattern, ...] = (
    Pattern("no-retry page fault", r"no-retry page fault"),
    Pattern("Faulty UTCL2 client ID", r"Faulty UTCL2 client ID"),
    Pattern("MES ring buffer is full", r"MES ring buffer is full"),
    Pattern("SDMA fence timeout", r"ring sdma\S* timeout|Fence fallback timer expired on ring sdma"),
    Pattern("ring timeout", r"ring \S+ timeout"),
    Pattern("GPU reset", r"GPU reset(\(\d+\))? ?(begin|succeeded|failed|end)"),
)

# PLAT-WEDGED: MES stopped answering. With halt_if_hws_hang=1 the submitting thread then spins
# in the kernel, so this line is followed by D-state workers and a kfd list that never drains.
# Formats across MES versions: "MES failed to respond to msg=%s", "MES(%d) ...", "MES(%d, %d) ..."
# (mes_v12_1: xcc, pipe), and the older "MES failed to response msg=%d".
PLAT_WEDGED: tuple[Pattern, ...] = (
    Pattern("MES failed to respond", r"MES(\(\d+(,\s*\d+)?\))? failed to respon(d to|se) msg="),
)


def parse(text: str) -> list[KmsgLine]:
    """dmesg's default output -> lines. A line without a [timestamp] keeps t=None."""
    out = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        m = _LINE.match(raw)
        out.append(KmsgLine(float(m.group(1)), m.group(2), raw) if m else KmsgLine(None, raw, raw))
    return out


def since(lines: list[KmsgLine], t: float | None) -> list[KmsgLine]:
    """The lines logged after printk time t (all of them when t is None). Untimestamped lines
    cannot be placed in a window and are kept, so nothing is hidden."""
    if t is None:
        return list(lines)
    return [ln for ln in lines if ln.t is None or ln.t > t]


def match(lines: list[KmsgLine], patterns: tuple[Pattern, ...] | list[Pattern],
          ignore: list[str] | tuple[str, ...] = ()) -> list[Hit]:
    """Every line that matches at least one pattern (and no ignore regex), in log order."""
    ign = [re.compile(r) for r in ignore]
    hits = []
    for ln in lines:
        if any(r.search(ln.text) for r in ign):
            continue
        names = tuple(p.name for p in patterns if p.search(ln.text))
        if names:
            hits.append(Hit(ln, names))
    return hits


def _run(host: Host) -> str:
    # kernel.dmesg_restrict=1 lets only root read the buffer: go through sudo -n otherwise.
    cmd = "dmesg" if host.is_root else "sudo -n dmesg"
    # Missing, failing, or printing nothing (a booted kernel has always logged): could not observe.
    return host.run(cmd, timeout=60).require(tool="dmesg").stdout


def read_dmesg(host: Host, since_monotonic: float | None = None) -> list[KmsgLine]:
    """The node's kernel log for the current boot, optionally only after a printk time."""
    return since(parse(_run(host)), since_monotonic)


def cursor(host: Host) -> float:
    """The printk time of the newest line: the start of a window for read_dmesg later."""
    lines = [ln for ln in parse(_run(host)) if ln.t is not None]
    return lines[-1].t if lines else 0.0


def excerpt(hits: list[Hit], limit: int = 8) -> str:
    """The first matching lines as dmesg printed them, with a count of the rest."""
    shown = [h.line.raw for h in hits[:limit]]
    more = f" (+{len(hits) - limit} more)" if len(hits) > limit else ""
    return " | ".join(shown) + more
