"""PCIe Advanced Error Reporting (AER) in the kernel log, and which GPU each error is charged to.

Linux's AER driver (drivers/pci/pcie/aer.c, err.c; docs/formats.md cites each string) logs an
error in records of its own:

    pcieport 0000:00:03.1: AER: Uncorrectable (Non-Fatal) error message received from 0000:25:00.0
    amdgpu 0000:25:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester ID)
    amdgpu 0000:25:00.0:   device [1002:75a3] error status/mask=00004000/00000000
    amdgpu 0000:25:00.0:    [14] CmpltTO                (First)
    pcieport 0000:00:03.1: AER: device recovery successful

The port that received the message names the source; the device that logged the error prints the
`PCIe Bus Error` line with its severity (`Corrected`/`Uncorrected (...)` before the kernel renamed
them `Correctable`/`Uncorrectable (...)`), then its status bits (aer.c's bit names). Older kernels
say `... error received: <bdf>` (or `id=<hex>`) instead of `... error message received from <bdf>`.
The firmware-first path (APEI/GHES, `pci_print_aer`) logs `aer_status: 0x..., aer_mask: 0x...`,
the same bit lines, `aer_layer=..., aer_agent=...` and, for an uncorrectable error,
`aer_uncor_severity: 0x...` (a status bit whose severity bit is set is fatal).

Records are recognised by that structure, anywhere in a line (a timestamp, a syslog or journal
prefix, a `dmesg -x` level, ANSI colour in front change nothing: rackgate/lines.py cleans each line
first). A GPU is charged with a record naming its own address or one of its upstream ports (the PCI
bridges above it: `readlink -f /sys/class/drm/cardN/device`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..access import NodeAccess
from ..lines import clean
from . import drm

_BDF = r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
BDF_IN_PATH = re.compile(r"(?<![0-9a-fA-F:])" + _BDF + r"(?![0-9a-fA-F])")
_SEV = r"(Corrected|Correctable|Uncorrect(?:ed|able) \((?:Non-)?Fatal\))"
# "<driver> <bdf>: " -- the device a line is logged against (dev_printk's prefix).
_DEV = re.compile(r"(?:^|\s)[A-Za-z0-9_.-]+ " + _BDF + r": ?")
_SOURCE = re.compile(r"^AER: (Multiple )?" + _SEV + r" error (?:message received from|received:) (?:id=)?(\S+)")
_DETAIL = re.compile(r"^(?:AER: )?PCIe Bus Error: severity=" + _SEV + r", type=([^,]+), \(([^)]*)\)")
_HEX8 = r"([0-9a-fA-F]{8})"
_STATUS = re.compile(r"^(?:AER: )?\s*device \[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\] error status/mask=" + _HEX8 + "/" + _HEX8)
_BIT = re.compile(r"^(?:AER: )?\s*\[\s*(\d{1,2})\] (.+?)\s*?( \(First\))?\s*$")
_FW_STATUS = re.compile(r"^(?:AER: )?aer_status: 0x([0-9a-fA-F]{8}), aer_mask: 0x([0-9a-fA-F]{8})")
_FW_LAYER = re.compile(r"^(?:AER: )?aer_layer=([^,]+), aer_agent=(.+)$")
_FW_SEVERITY = re.compile(r"^(?:AER: )?aer_uncor_severity: 0x([0-9a-fA-F]{8})")
_RECOVERY = re.compile(r"^AER: [Dd]evice recovery (successful|failed)")

SEVERITY = {"Corrected": "corrected", "Correctable": "corrected",
            "Uncorrected (Non-Fatal)": "nonfatal", "Uncorrectable (Non-Fatal)": "nonfatal",
            "Uncorrected (Fatal)": "fatal", "Uncorrectable (Fatal)": "fatal"}
WORDS = {"corrected": "Correctable", "nonfatal": "Uncorrectable (Non-Fatal)", "fatal": "Uncorrectable (Fatal)"}


@dataclass(frozen=True)
class Record:
    """One AER error as the kernel logged it against one device."""
    t: float | None            # printk seconds of its first line (None: no timestamp)
    device: str                # the PCI address the error was logged against
    severity: str              # "corrected", "nonfatal" or "fatal"
    kind: str = ""             # the layer ("Transaction Layer"), "" when not logged
    bits: tuple[str, ...] = ()  # the status bits' names, as aer.c prints them
    first: str = ""            # the bit flagged (First)
    reporter: str = ""         # the port that received the message ("" for firmware-first)
    recovery: str = ""         # "successful", "failed" or "" (none logged)
    lines: tuple[str, ...] = ()  # the lines as the log printed them

    @property
    def uncorrectable(self) -> bool:
        return self.severity != "corrected"

    def describe(self) -> str:
        bits = ", ".join(b + (" (First)" if b == self.first else "") for b in self.bits)
        return (f"{WORDS[self.severity]} {self.kind + ' ' if self.kind else ''}error on {self.device}"
                + (f" ({bits})" if bits else "") + (f", recovery {self.recovery}" if self.recovery else "")
                + (f", at {self.t:.6f} s" if self.t is not None else ""))


@dataclass
class _Open:
    t: float | None
    device: str
    severity: str | None
    kind: str = ""
    bits: list[str] = field(default_factory=list)
    first: str = ""
    reporter: str = ""
    recovery: str = ""
    lines: list[str] = field(default_factory=list)
    status: int = 0
    mask: int = 0
    fw: bool = False  # the firmware-first layout (severity from aer_uncor_severity)

    def freeze(self) -> Record:
        return Record(self.t, self.device, self.severity or "corrected", self.kind, tuple(self.bits), self.first,
                      self.reporter, self.recovery, tuple(self.lines))


def _device_and_message(text: str) -> tuple[str, str] | None:
    m = _DEV.search(text)
    return (m.group(1).lower(), text[m.end():]) if m else None


def records(lines: list[tuple[float | None, str]]) -> list[Record]:
    """(printk time, line) in log order -> every AER record, in order. Lines that are no part of an
    AER record are skipped; a record's bit lines belong to the device that logged its head."""
    out: list[_Open] = []
    by_dev: dict[str, _Open] = {}  # the open record of each device (its bit lines follow its head)
    source: tuple[str, str, str, float | None, str] | None = None  # (severity, id, reporter, t, line)
    sourced: set[str] = set()  # devices with a detail record under the current source line
    for t, raw in lines:
        text = clean(raw).strip()
        dm = _device_and_message(text)
        if dm is None:
            continue
        dev, msg = dm
        if (m := _SOURCE.match(msg)) is not None:
            _orphan(source, sourced, out)
            source, sourced = (SEVERITY[m.group(2)], m.group(3).lower().rstrip(","), dev, t, raw), set()
            continue
        if (m := _RECOVERY.match(msg)) is not None:
            _orphan(source, sourced, out)
            source, sourced = None, set()
            for r in out:
                if r.severity != "corrected" and not r.recovery:
                    r.recovery = m.group(1)
            continue
        if (m := _DETAIL.match(msg)) is not None:
            rec = _Open(source[3] if source else t, dev, SEVERITY[m.group(1)], m.group(2).strip(),
                        reporter=source[2] if source else "", lines=[raw])
            if source is not None:
                rec.lines.insert(0, source[4])
                sourced.add(dev)
            out.append(rec)
            by_dev[dev] = rec
            continue
        if (m := _FW_STATUS.match(msg)) is not None:
            _orphan(source, sourced, out)
            source, sourced = None, set()
            rec = _Open(t, dev, None, lines=[raw], status=int(m.group(1), 16), mask=int(m.group(2), 16), fw=True)
            out.append(rec)
            by_dev[dev] = rec
            continue
        cur = by_dev.get(dev)
        if cur is None:
            continue
        if (m := _STATUS.match(msg)) is not None:
            cur.status, cur.mask = int(m.group(3), 16), int(m.group(4), 16)
        elif (m := _BIT.match(msg)) is not None:
            cur.bits.append(m.group(2).strip())
            if m.group(3):
                cur.first = m.group(2).strip()
        elif cur.fw and (m := _FW_LAYER.match(msg)) is not None:
            cur.kind = m.group(1).strip()
        elif cur.fw and (m := _FW_SEVERITY.match(msg)) is not None:
            sev = int(m.group(1), 16)
            cur.severity = "fatal" if cur.status & ~cur.mask & sev else "nonfatal"
        else:
            continue
        cur.lines.append(raw)
    _orphan(source, sourced, out)
    return [r.freeze() for r in out]


def _orphan(source: tuple[str, str, str, float | None, str] | None, sourced: set[str], out: list[_Open]) -> None:
    """A source line no device's detail followed (ratelimited, or "(no details found"): a record
    against the source it names, when that is a PCI address."""
    if source is None or sourced:
        return
    sev, ident, reporter, t, line = source
    bdf = BDF_IN_PATH.search(ident)
    if bdf is not None:
        out.append(_Open(t, bdf.group(1).lower(), sev, reporter=reporter, lines=[line]))


# --- which GPU a device is -----------------------------------------------------------------------
@dataclass(frozen=True)
class GpuPath:
    """A GPU and the PCI bridges above it (root port first), from its device's real sysfs path."""
    label: str                   # gpu1 (card1, 0000:15:00.0)
    bdf: str
    upstream: tuple[str, ...]    # upstream ports' addresses, root port first

    def names(self, device: str) -> str | None:
        """'' when `device` is this GPU, 'upstream port X' when one of its bridges, else None."""
        if device == self.bdf:
            return ""
        return f"its upstream port {device}" if device in self.upstream else None


# One line per primary card: name <TAB> the device's resolved path <TAB> driver link.
_TOPOLOGY = ('d="$1"; [ -d "$d" ] || { echo "$2"; exit 0; }; command -v readlink >/dev/null || exit 127; '
             'for c in "$d"/card*; do [ -e "$c" ] || continue; n="${c##*/}"; case "$n" in *-*) continue;; esac; '
             'u=""; [ -d "$c/device/ualink" ] && u=ualink; '
             'printf "%s\\t%s\\t%s\\t%s\\n" "$n" "$(readlink -f "$c/device")" "$(readlink "$c/device/driver")" "$u"; '
             'done; echo "$3"')


def upstream_of(path: str) -> list[str]:
    """Every PCI address in a resolved sysfs device path, root port first (the device's own last)."""
    return [b.lower() for b in BDF_IN_PATH.findall(path)]


def parse_topology(text: str, node: str, expected: int | None) -> tuple[GpuPath, ...]:
    """The topology script's lines -> each amdgpu card with its upstream ports (GPU numbers as
    probes/drm.py gives them, when the node shows `expected` cards)."""
    cards = drm.parse_listing(text, f"node {node}")
    paths = {int(line.split("\t")[0].removeprefix("card")): line.split("\t")[1]
             for line in text.splitlines() if line.strip()}
    gmap = drm.GpuMap.of(node, cards)
    numbered = expected is None or len(gmap.gpus) == expected
    out = []
    for g, c in enumerate(gmap.gpus):
        chain = upstream_of(paths.get(c.card, ""))
        up = tuple(b for b in chain if b != c.bdf)
        out.append(GpuPath(drm.label(g if numbered else None, c.card, c.bdf), c.bdf or "", up))
    return tuple(out)


def topology(host: NodeAccess, expected: int | None) -> tuple[GpuPath, ...]:
    """The node's GPUs and their upstream ports (raises CouldNotObserve when it cannot list them)."""
    return parse_topology(drm.read_drm(host, _TOPOLOGY, "listing the GPUs' PCI paths"), host.name, expected)


def charged(rec: Record, gpus: tuple[GpuPath, ...]) -> list[tuple[GpuPath, str]]:
    """The GPUs a record is charged to, each with how ('' itself, or its upstream port)."""
    out = []
    for g in gpus:
        how = g.names(rec.device)
        if how is not None:
            out.append((g, how))
    return out


def busiest_minute(times: list[float]) -> int:
    """The most records within any 60 s of the printk clock."""
    ts = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(ts):
        while t - ts[lo] > 60.0:
            lo += 1
        best = max(best, hi - lo + 1)
    return best
