"""The kernel log (dmesg), per node: parsed lines, time windows, and the catalogue's patterns.

`dmesg` prints the kernel ring buffer, which holds the current boot only, one line per record:

    [  312.441907] amdgpu 0000:05:00.0: amdgpu: MES(0, 0) failed to respond to msg=REMOVE_QUEUE

The bracket is seconds since boot (the printk clock). A time window is expressed in that clock:
take `cursor(host)` (the newest line's timestamp) before the work, then
`read_dmesg(host, since_monotonic=cursor)` returns only what the kernel logged after it. No
wall clock is involved, so a skewed or NTP-stepped node clock cannot shift the window.

Pattern lists are catalogue data (Row.patterns): PLAT_DMESG and PLAT_WEDGED here; other areas
(FAB-DMESG) read their own row and use the same `match`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..access import NodeAccess
from ..catalogue import Pattern
from ..catalogue import row as catalogue_row
from ..errors import CouldNotObserve, UnrecognisedOutput
from . import aer
from .aer import GpuPath, Record
from .target import On

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
class Hit:
    line: KmsgLine
    patterns: tuple[str, ...]  # names of every pattern the line matched


# The signatures are catalogue data (rackgate/catalogue/plat.toml [[row.pattern]], each with the
# real kernel lines it must match): PLAT-DMESG, a node not healthy even at 0% VRAM; PLAT-WEDGED,
# MES stopped answering (with halt_if_hws_hang=1 the submitting thread then spins in the kernel,
# so that line is followed by D-state workers and a kfd list that never drains).
PLAT_DMESG: tuple[Pattern, ...] = catalogue_row("PLAT-DMESG").patterns
PLAT_WEDGED: tuple[Pattern, ...] = catalogue_row("PLAT-WEDGED").patterns


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


def _run(host: NodeAccess) -> str:
    # kernel.dmesg_restrict=1 lets only root read the buffer: go through sudo -n otherwise.
    cmd = ["dmesg"] if host.is_root else ["sudo", "-n", "dmesg"]
    # Missing, failing, or printing nothing (a booted kernel has always logged): could not observe.
    return host.run(cmd, timeout=60).require(tool="dmesg").stdout


def read_dmesg(host: NodeAccess, since_monotonic: float | None = None) -> list[KmsgLine]:
    """The node's kernel log for the current boot, optionally only after a printk time."""
    text = _run(host)
    lines = parse(text)
    if not any(ln.t is not None for ln in lines):  # a kernel log always has timestamped lines
        raise UnrecognisedOutput(f"node {host.name}: dmesg printed no [timestamp] line: {text.strip()[:120]!r}")
    return since(lines, since_monotonic)


def cursor(host: NodeAccess) -> float:
    """The printk time of the newest line: the start of a window for read_dmesg later."""
    lines = [ln for ln in parse(_run(host)) if ln.t is not None]
    return (lines[-1].t or 0.0) if lines else 0.0


def excerpt(hits: list[Hit], limit: int = 8) -> str:
    """The first matching lines as dmesg printed them, with a count of the rest."""
    shown = [h.line.raw for h in hits[:limit]]
    more = f" (+{len(hits) - limit} more)" if len(hits) > limit else ""
    return " | ".join(shown) + more


@dataclass(frozen=True)
class Scan:
    """This boot's kernel log read whole, the lines matching a row's signatures, its PCIe AER
    records (probes/aer.py) and the GPUs with their upstream ports they are charged to (read only
    when there is a record; `topology_error` says why they could not be listed)."""
    lines: int
    hits: list[Hit]
    aer: tuple[Record, ...] = ()
    gpus: tuple[GpuPath, ...] = ()
    topology_error: str = ""


def plat_dmesg(on: On) -> Scan:
    """PLAT-DMESG's probe: this boot's lines matching its signatures (less platform.dmesg_ignore),
    and its AER records with the GPUs they name."""
    lines = read_dmesg(on.host)
    ignore = on.rack.platform.dmesg_ignore
    ign = [re.compile(r) for r in ignore]
    records = aer.records([(ln.t, ln.raw) for ln in lines if not any(r.search(ln.text) for r in ign)])
    gpus: tuple[GpuPath, ...] = ()
    why = ""
    if records:
        try:
            gpus = aer.topology(on.host, on.rack.gpus_per_node)
        except CouldNotObserve as e:
            why = str(e)
    return Scan(len(lines), match(lines, PLAT_DMESG, ignore), tuple(records), gpus, why)
