"""A node's hardware error counters, every GPU at once, in one command: ECC per RAS block, retired
(bad) VRAM pages, PCIe AER counts and the PCIe replay count (docs/platform.md names each source,
its format and where the format comes from).

One shell per node lists the amdgpu DRM cards (probes/drm.py's listing lines) and prints, per card,
every counter file between marker lines; `parse` turns the reply into a `Snapshot` (typed counters
per GPU, GPU g = the g-th amdgpu card in PCI order, as probes/drm.py numbers them). Formats:

- ras/<block>_err_count (amdgpu_ras.c amdgpu_ras_sysfs_read): "ue: N\\nce: N\\n", UMC also
  "de: N"; "Query currently inaccessible" while a reset or RAS interrupt is being handled.
- ras/gpu_vram_bad_pages (amdgpu_ras_sysfs_badpages_read): one line per retired page,
  "0x%08x : 0x%08x : %1s" (pfn : page size : R reserved | P pending | F could not be reserved);
  empty when no page is retired.
- ras/features (amdgpu_ras_sysfs_features_read): "feature mask: 0x%x".
- aer_dev_correctable / aer_dev_fatal / aer_dev_nonfatal (drivers/pci/pcie/aer.c
  aer_stats_dev_attr): "<Name> <count>" per error type, unnamed bits as
  "<array>_bit[N] <count>", last line "TOTAL_ERR_COR|TOTAL_ERR_FATAL|TOTAL_ERR_NONFATAL <count>".
- pcie_replay_count (amdgpu): one decimal number.

A GPU without a ras/ directory (RAS off, a foreign board) has `blocks` None: could-not-observe
for a judge that needs it, never "no errors". A reply that does not come back whole, a line no
format above knows, or a marker out of place is UnrecognisedOutput.
"""
from __future__ import annotations

import dataclasses
import json
import re
import time
from dataclasses import dataclass, field

from ..access import NodeAccess
from ..catalogue import row
from ..errors import CouldNotObserve, UnrecognisedOutput
from ..lines import clean_text
from . import aer, amdsmi, dmesg, drm
from .target import On

AER_FILES = ("aer_dev_correctable", "aer_dev_fatal", "aer_dev_nonfatal")
AER_TOTALS = {"aer_dev_correctable": "TOTAL_ERR_COR", "aer_dev_fatal": "TOTAL_ERR_FATAL",
              "aer_dev_nonfatal": "TOTAL_ERR_NONFATAL"}
INACCESSIBLE = "Query currently inaccessible"
# Per amdgpu card: "@@card" + drm.py's listing line, then "@@file NAME" + its text (or
# "@@unreadable NAME"), "@@absent NAME" for a file that is not there, "@@nodir ras" without ras/.
_SCRIPT = (
    'd="$1"; [ -d "$d" ] || { echo "$2"; exit 0; }; command -v readlink >/dev/null || exit 127; '
    'show() { if [ ! -e "$1" ]; then echo "@@absent $2"; elif c=$(cat "$1" 2>/dev/null); then '
    'echo "@@file $2"; [ -n "$c" ] && printf "%s\\n" "$c"; else echo "@@unreadable $2"; fi; }; '
    'for c in "$d"/card*; do [ -e "$c" ] || continue; n="${c##*/}"; case "$n" in *-*) continue;; esac; '
    'drv="$(readlink "$c/device/driver")"; [ "${drv##*/}" = amdgpu ] || [ -d "$c/device/ualink" ] || continue; '
    'u=""; [ -d "$c/device/ualink" ] && u=ualink; '
    'printf "@@card %s\\t%s\\t%s\\t%s\\n" "$n" "$(readlink "$c/device")" "$drv" "$u"; dev="$c/device"; '
    'printf "@@path %s\\n" "$(readlink -f "$dev")"; '
    'if [ -d "$dev/ras" ]; then for f in "$dev"/ras/*; do [ -f "$f" ] || continue; n="${f##*/}"; case "$n" in '
    '*_err_count|aca_*|gpu_vram_bad_pages|features|version|schema|event_state) show "$f" "ras/$n";; '
    '*) echo "@@other ras/$n";; esac; done; '
    'for n in gpu_vram_bad_pages features; do [ -e "$dev/ras/$n" ] || echo "@@absent ras/$n"; done; '
    'else echo "@@nodir ras"; fi; '
    'for f in aer_dev_correctable aer_dev_fatal aer_dev_nonfatal pcie_replay_count; do show "$dev/$f" "$f"; done; '
    'done; echo "@@kmsg"; { dmesg 2>/dev/null || sudo -n dmesg 2>/dev/null || echo "@@kmsg-unread"; } | '
    'grep -E "AER|PCIe Bus Error|error status/mask|aer_|@@kmsg-unread|: +\\[ *[0-9]+\\] "; echo "@@kmsg-end"; '
    '[ "$4" = throttle ] && if command -v amd-smi >/dev/null 2>&1; then echo "@@smi"; '
    'amd-smi metric --throttle --json 2>/dev/null; echo "@@smi-rc $?"; else echo "@@nosmi"; fi; echo "$3"')

_COUNT = re.compile(r"(ue|ce|de):\s*(\d+)")
_VERSION = re.compile(r"table version:\s*0x([0-9a-fA-F]+)")
_SCHEMA = re.compile(r"schema:\s*0x([0-9a-fA-F]+)")
_SEQNO = re.compile(r"current seqno:\s*(\d+)")
_EVENT = re.compile(r"([A-Za-z][A-Za-z ]*?)\s*: count:\s*(\d+), last_seqno:\s*(\d+)")
_PAGE = re.compile(r"0x([0-9a-fA-F]{1,16})\s*:\s*0x([0-9a-fA-F]{1,16})\s*:\s*([RPF])")
_FEATURES = re.compile(r"feature mask:\s*0x([0-9a-fA-F]+)")
_AER = re.compile(r"([A-Za-z][A-Za-z0-9_]*(?:\[\d+\])?) (\d+)")
_BLOCK_FILE = re.compile(r"ras/([a-z0-9_]+)_err_count")
_ACA_FILE = re.compile(r"ras/aca_([a-z0-9_]+)")


@dataclass(frozen=True)
class Block:
    """One RAS block's counts since the driver loaded (de: deferred, UMC only, newer drivers)."""
    name: str
    ue: int
    ce: int
    de: int | None = None


@dataclass(frozen=True)
class BadPage:
    pfn: int
    size: int
    flag: str  # R reserved, P pending, F could not be reserved


@dataclass(frozen=True)
class GpuCounters:
    gpu: int | None  # GPU g of the node (PCI order); None when the node shows an unexpected card count
    card: int
    bdf: str | None
    blocks: dict[str, Block] | None  # None: no ras/ directory
    bad_pages: tuple[BadPage, ...] | None  # None: no ras/gpu_vram_bad_pages
    features: int | None
    aer: dict[str, dict[str, int]] = field(default_factory=dict)  # aer_dev_* file -> name -> count
    replay: int | None = None  # pcie_replay_count
    absent: tuple[str, ...] = ()  # counter files that are not there
    unreadable: tuple[str, ...] = ()  # there, but reading failed or said "inaccessible"
    throttle: dict[str, int] | None = None  # amd-smi metric --throttle: accumulators (None: not read)
    layout: str = ""  # the per-block counters' layout: "err_count", "aca", both "err_count+aca", "" none
    others: tuple[str, ...] = ()  # files in ras/ that no known layout has (listed, never read)
    events: dict[str, int] | None = None  # ras/event_state: event name -> count (None: no such file)
    version: int | None = None  # ras/version "table version: 0x%x" (the bad page table's)
    schema: int | None = None  # ras/schema "schema: 0x%x"
    files: tuple[str, ...] = ()  # every file found in ras/ (known or not)
    kmsg_aer: dict[str, int] | None = None  # the kernel log's AER records charged to it this boot (None: not read)

    @property
    def label(self) -> str:
        return drm.label(self.gpu, self.card, self.bdf)

    def counters(self) -> dict[str, int]:
        """Every count by a stable name: ras.umc.ue, bad_pages, aer.correctable.Rollover, pcie.replay."""
        out: dict[str, int] = {}
        for b in (self.blocks or {}).values():
            out[f"ras.{b.name}.ue"] = b.ue
            out[f"ras.{b.name}.ce"] = b.ce
            if b.de is not None:
                out[f"ras.{b.name}.de"] = b.de
        if self.bad_pages is not None:
            out["bad_pages"] = len(self.bad_pages)
        for event, count in (self.events or {}).items():
            out[f"ras_event.{event}"] = count
        for sev, count in (self.kmsg_aer or {}).items():
            out[f"kmsg_aer.{sev}"] = count
        for f, names in self.aer.items():
            for n, v in names.items():
                out[f"aer.{f.removeprefix('aer_dev_')}.{n}"] = v
        if self.replay is not None:
            out["pcie.replay"] = self.replay
        for k, v in (self.throttle or {}).items():
            out[f"throttle.{k}"] = v
        return out


@dataclass(frozen=True)
class Snapshot:
    node: str
    at: float
    gpus: tuple[GpuCounters, ...]
    raw: str = ""
    throttle_error: str = ""  # why amd-smi's throttle counters were not read ("" when they were)
    kmsg_error: str = ""      # why the kernel log's AER records were not counted ("" when they were)

    def gpu(self, card: int) -> GpuCounters | None:
        return next((g for g in self.gpus if g.card == card), None)


# --- parsers -----------------------------------------------------------------------------------
def parse_err_count(text: str, where: str) -> Block | None:
    """ras/<block>_err_count -> Block; None when the driver says the query is inaccessible."""
    name = where.rsplit("/", 1)[-1].removesuffix("_err_count")
    if text.strip() == INACCESSIBLE:
        return None
    got: dict[str, int] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _COUNT.fullmatch(line.strip())
        if m is None or m.group(1) in got:
            raise UnrecognisedOutput(f"{where}: line not understood: {line[:120]!r}")
        got[m.group(1)] = int(m.group(2))
    if "ue" not in got or "ce" not in got:
        raise UnrecognisedOutput(f"{where}: no 'ue: N' and 'ce: N' lines: {text[:120]!r}")
    return Block(name, got["ue"], got["ce"], got.get("de"))


def parse_event_state(text: str, where: str) -> dict[str, int]:
    """ras/event_state (amdgpu_ras_sysfs_event_state_show): "current seqno: N", then per event
    type "<Name>: count:N, last_seqno:N" (an early version put a space before the colon) ->
    {"fatal_error": N, "poison_creation": N, ...}; the seqno line must be there."""
    out: dict[str, int] = {}
    seqno = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if _SEQNO.fullmatch(line.strip()) and not seqno:
            seqno = True
            continue
        m = _EVENT.fullmatch(line.strip())
        key = m.group(1).strip().lower().replace(" ", "_") if m else ""
        if m is None or key in out:
            raise UnrecognisedOutput(f"{where}: line not understood: {line[:120]!r}")
        out[key] = int(m.group(2))
    if not seqno:
        raise UnrecognisedOutput(f"{where}: no 'current seqno: N' line: {text[:120]!r}")
    return out


def parse_hex_line(text: str, where: str, pattern: re.Pattern[str], shape: str) -> int:
    m = pattern.fullmatch(text.strip())
    if m is None:
        raise UnrecognisedOutput(f"{where}: not '{shape}': {text[:120]!r}")
    return int(m.group(1), 16)


def parse_bad_pages(text: str, where: str) -> tuple[BadPage, ...]:
    pages = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _PAGE.fullmatch(line.strip())
        if m is None:
            raise UnrecognisedOutput(f"{where}: line not understood: {line[:120]!r}")
        pages.append(BadPage(int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
    return tuple(pages)


def parse_features(text: str, where: str) -> int:
    m = _FEATURES.fullmatch(text.strip())
    if m is None:
        raise UnrecognisedOutput(f"{where}: not 'feature mask: 0x...': {text[:120]!r}")
    return int(m.group(1), 16)


def parse_aer(text: str, where: str, file: str = "aer_dev_correctable") -> dict[str, int]:
    """An aer_dev_* file -> {name: count}; its TOTAL_ line must be there (the file's last line)."""
    total = AER_TOTALS[file]
    out: dict[str, int] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _AER.fullmatch(line.strip())
        if m is None or m.group(1) in out:
            raise UnrecognisedOutput(f"{where}: line not understood: {line[:120]!r}")
        out[m.group(1)] = int(m.group(2))
    if total not in out:
        raise UnrecognisedOutput(f"{where}: no '{total} N' line: {text[:120]!r}")
    return out


def parse_replay(text: str, where: str) -> int:
    if not text.strip().isdecimal():
        raise UnrecognisedOutput(f"{where}: not a count: {text[:120]!r}")
    return int(text.strip())


@dataclass
class _Card:
    line: str
    files: dict[str, str | None] = field(default_factory=dict)  # name -> text, None unreadable
    absent: list[str] = field(default_factory=list)
    nodir: bool = False
    others: list[str] = field(default_factory=list)
    path: str = ""  # the device's resolved sysfs path (the PCI bridges above the GPU)


@dataclass
class _Smi:
    text: list[str] = field(default_factory=list)
    rc: int | None = None
    absent: bool = False
    open: bool = False


@dataclass
class _Kmsg:
    """The kernel log's AER lines as the script's grep passed them (None: not in this reply)."""
    lines: list[str] | None = None
    open: bool = False
    unread: bool = False


def _sections(text: str, node: str, smi: _Smi, kmsg: _Kmsg | None = None) -> list[_Card]:
    kmsg = kmsg if kmsg is not None else _Kmsg()
    cards: list[_Card] = []
    cur: _Card | None = None
    body: list[str] | None = None
    name = ""
    for line in text.split("\n"):
        if kmsg.open:
            if line == "@@kmsg-end":
                kmsg.open = False
            elif line == "@@kmsg-unread":
                kmsg.unread = True
            elif kmsg.lines is not None:
                kmsg.lines.append(line)
            continue
        if line == "@@kmsg":
            if body is not None and cur is not None:
                cur.files[name] = "\n".join(body)
            body = None
            kmsg.open, kmsg.lines = True, []
            continue
        if smi.open:
            m = re.fullmatch(r"@@smi-rc (\d+)", line)
            if m:
                smi.open, smi.rc = False, int(m.group(1))
            else:
                smi.text.append(line)
            continue
        if line in ("@@smi", "@@nosmi"):
            if body is not None and cur is not None:
                cur.files[name] = "\n".join(body)
            body = None
            smi.open, smi.absent = line == "@@smi", line == "@@nosmi"
            continue
        if line.startswith("@@"):
            if body is not None and cur is not None:
                cur.files[name] = "\n".join(body)
            body = None
            word, _, rest = line[2:].partition(" ")
            if word == "card":
                cur = _Card(rest)
                cards.append(cur)
                continue
            if cur is None:
                raise UnrecognisedOutput(f"node {node}: counter output has {line[:80]!r} before any card")
            if word == "file":
                name, body = rest, []
            elif word == "unreadable":
                cur.files[rest] = None
            elif word == "absent":
                cur.absent.append(rest)
            elif word == "nodir" and rest == "ras":
                cur.nodir = True
            elif word == "other" and rest.startswith("ras/"):
                cur.others.append(rest)
            elif word == "path":
                cur.path = rest
            else:
                raise UnrecognisedOutput(f"node {node}: counter output line not understood: {line[:120]!r}")
        elif body is not None:
            body.append(line)
        elif line.strip():
            raise UnrecognisedOutput(f"node {node}: counter output line outside any file: {line[:120]!r}")
    if body is not None and cur is not None:
        cur.files[name] = "\n".join(body)
    return cards


def _gpu(c: _Card, card: drm.Card, gpu: int | None, node: str) -> GpuCounters:
    where = f"{node}/{drm.label(gpu, card.card, card.bdf)}"
    unreadable = [n for n, t in c.files.items() if t is None]
    blocks: dict[str, Block] | None = None if c.nodir else {}
    pages: tuple[BadPage, ...] | None = None
    features = None
    aer: dict[str, dict[str, int]] = {}
    replay = None
    events: dict[str, int] | None = None
    version = schema = None
    aca: dict[str, Block] = {}
    layouts: list[str] = []
    for name, text in c.files.items():
        at = f"{where} {name}"
        m = _BLOCK_FILE.fullmatch(name) or _ACA_FILE.fullmatch(name)
        kind = "" if m is None else "aca" if name.startswith("ras/aca_") else "err_count"
        if kind and kind not in layouts:
            layouts.append(kind)
        if text is None:
            continue
        if kind and blocks is not None:
            b = parse_err_count(text, at)
            if b is None:
                unreadable.append(f"{name} ({INACCESSIBLE})")
            elif kind == "aca":
                aca[m.group(1)] = dataclasses.replace(b, name=m.group(1))  # type: ignore[union-attr]
            else:
                blocks[b.name] = b
        elif name == "ras/event_state":
            events = parse_event_state(text, at)
        elif name == "ras/version":
            version = parse_hex_line(text, at, _VERSION, "table version: 0x...")
        elif name == "ras/schema":
            schema = parse_hex_line(text, at, _SCHEMA, "schema: 0x...")
        elif name == "ras/gpu_vram_bad_pages":
            pages = parse_bad_pages(text, at)
        elif name == "ras/features":
            features = parse_features(text, at)
        elif name in AER_FILES:
            aer[name] = parse_aer(text, at, name)
        elif name == "pcie_replay_count":
            replay = parse_replay(text, at)
        else:
            raise UnrecognisedOutput(f"{where}: counter file {name!r} is not one this probe reads")
    if blocks is not None:  # the same driver counts through either file: the classic one first
        blocks.update({k: v for k, v in aca.items() if k not in blocks})
    return GpuCounters(gpu, card.card, card.bdf, blocks, pages, features, aer, replay,
                       tuple(c.absent), tuple(unreadable), layout="+".join(sorted(layouts)),
                       others=tuple(c.others), events=events, version=version, schema=schema,
                       files=tuple(sorted({n for n in c.files if n.startswith("ras/")} | set(c.others))))


def parse(text: str, node: str, expected: int | None = None, at: float = 0.0) -> Snapshot:
    """The script's reply (without its end marker) -> Snapshot. `expected`: gpus_per_node (GPU
    numbers are given only when the node shows exactly that many amdgpu cards)."""
    smi, kmsg = _Smi(), _Kmsg()
    text = clean_text(text)
    secs = _sections(text, node, smi, kmsg)
    pairs = [(s, drm.parse_listing(s.line, f"node {node}")[0]) for s in secs]
    gmap = drm.GpuMap.of(node, [c for _, c in pairs])
    order = {c.card: i for i, c in enumerate(gmap.gpus)}
    numbered = expected is None or len(gmap.gpus) == expected
    out = [_gpu(s, c, order.get(c.card) if numbered else None, node) for s, c in pairs]
    out.sort(key=lambda g: drm.pci_key(g.bdf) if g.bdf else (1 << 32,))
    got, why = _throttle(smi)
    if got and numbered:
        out = [dataclasses.replace(g, throttle=got.get(g.gpu)) if g.gpu is not None else g for g in out]
    paths = {c.card: s.path for s, c in pairs}
    counts, unread = kernel_aer(kmsg, out, paths)
    out = [dataclasses.replace(g, kmsg_aer=counts.get(g.card)) for g in out]
    return Snapshot(node, at, tuple(out), text, why, unread)


def kernel_aer(kmsg: _Kmsg, gpus: list[GpuCounters], paths: dict[int, str]) -> tuple[dict[int, dict[str, int]], str]:
    """Card -> the kernel log's AER records charged to that GPU (its own address or an upstream
    port's, probes/aer.py) this boot: {"correctable": N, "uncorrectable": N}; "" or why not read."""
    if kmsg.lines is None:
        return {}, "not read in this snapshot"
    if kmsg.unread:
        return {}, "dmesg could not be read (neither as this user nor through sudo -n)"
    topo = tuple(aer.GpuPath(g.label, g.bdf or "", tuple(b for b in aer.upstream_of(paths.get(g.card, "")) if b != g.bdf))
                 for g in gpus)
    recs = aer.records([(ln.t, ln.raw) for ln in dmesg.parse("\n".join(kmsg.lines))])
    out: dict[int, dict[str, int]] = {g.card: {"correctable": 0, "uncorrectable": 0} for g in gpus}
    for r in recs:
        for path, _ in aer.charged(r, topo):
            card = next(g.card for g in gpus if g.label == path.label)
            out[card]["uncorrectable" if r.uncorrectable else "correctable"] += 1
    return out, ""


def parse_throttle(text: str) -> dict[int, dict[str, int]]:
    """`amd-smi metric --throttle --json` -> GPU index -> the accumulators it printed as numbers
    (ACCUMULATION_COUNTER, <TYPE>_ACCUMULATED; "N/A" left out). Not amd-smi JSON: UnrecognisedOutput."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise UnrecognisedOutput(f"amd-smi metric --throttle --json is not JSON: {text.strip()[:120]!r}") from None
    out: dict[int, dict[str, int]] = {}
    for pos, rec in enumerate(amdsmi.gpu_list(data, UnrecognisedOutput)):
        t = rec.get("throttle") if isinstance(rec, dict) else None
        gpu = rec.get("gpu") if isinstance(rec, dict) else None
        if not isinstance(t, dict) or not isinstance(gpu, int) or isinstance(gpu, bool):
            raise UnrecognisedOutput(f"amd-smi metric --throttle entry {pos} has no 'gpu' and 'throttle'")
        vals: dict[str, int] = {}
        for k, v in t.items():
            v = v.get("value") if isinstance(v, dict) else v
            if str(k) == "accumulation_counter" or str(k).endswith("_accumulated"):
                if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                    vals[str(k)] = v
        out[gpu] = vals
    return out


def _throttle(smi: _Smi) -> tuple[dict[int, dict[str, int]], str]:
    if smi.absent:
        return {}, "amd-smi is not installed (amd-smi metric --throttle)"
    if smi.rc is None and not smi.open:
        return {}, "not read in this snapshot"
    if smi.rc is None:
        return {}, "amd-smi metric --throttle's output did not end (no exit status)"
    if smi.rc != 0:
        return {}, f"amd-smi metric --throttle --json exited {smi.rc}"
    try:
        return parse_throttle("\n".join(smi.text)), ""
    except UnrecognisedOutput as e:
        return {}, str(e)


def snapshot(host: NodeAccess, expected: int | None = None, throttle: bool = False) -> Snapshot:
    """Every counter of every amdgpu card of a node, in one command; with `throttle`, amd-smi's
    throttle accumulators too (one amd-smi start more: only where SRV-THROTTLE needs them)."""
    at = time.time()
    text = drm.read_drm(host, _SCRIPT, "reading the GPUs' error counters", "throttle" if throttle else "-", timeout=60)
    snap = parse(text, host.name, expected, at)
    if not snap.gpus:
        raise CouldNotObserve(f"node {host.name}: no DRM card bound to amdgpu: no GPU error counters to read")
    return snap


def of_node(on: On) -> Snapshot:
    """The declared checks' probe (PLAT-RAS): one snapshot of the node's counters."""
    return snapshot(on.host, on.rack.gpus_per_node)


# --- between two snapshots ---------------------------------------------------------------------
@dataclass(frozen=True)
class Rise:
    gpu: str  # its label: gpu3 (card4, 0000:75:00.0)
    counter: str  # GpuCounters.counters() name
    before: int
    after: int
    seconds: float = 0.0  # wall time between the two snapshots (the stage's share of the rise)

    @property
    def by(self) -> int:
        return self.after - self.before

    def describe(self) -> str:
        return f"{self.gpu} {self.counter} {self.before} -> {self.after} (+{self.by})"


def rises(before: Snapshot, after: Snapshot) -> list[Rise]:
    """Every counter that went up between two snapshots of one node, per GPU (by card). A counter
    that went down (a driver reload reset it) is not a rise; a card seen only once is skipped."""
    out = []
    for a in after.gpus:
        b = before.gpu(a.card)
        if b is None or b.bdf != a.bdf:
            continue
        old = b.counters()
        for name, v in a.counters().items():
            if name in old and v > old[name]:
                out.append(Rise(a.label, name, old[name], v, max(after.at - before.at, 0.0)))
    return out


# --- the bracket's rises, as a check reads them -------------------------------------------------
@dataclass(frozen=True)
class Charged:
    """What rose on one node's GPUs while the stages a row judges ran (the bracket's snapshots at
    each stage's start and end, rackgate/fixtures/bracket.py): stage -> its rises, of the stages that ran."""
    node: str
    stages: tuple[str, ...]  # the row's bracketed stages, as the catalogue names them
    rises: dict[str, list[Rise]]


def _charged(on: On, row_id: str) -> Charged:
    stages = row(row_id).brackets
    return Charged(on.node, stages, on.charged(stages))


def fabric_stages(on: On) -> Charged:
    """FAB-ERRORS' probe: the rises charged to the fabric stages on this node (could-not-observe
    when none ran or a snapshot could not be read)."""
    return _charged(on, "FAB-ERRORS")


def serving_stages(on: On) -> Charged:
    """SRV-HW-ERRORS' probe: the rises charged to the serving stages on this node."""
    return _charged(on, "SRV-HW-ERRORS")


# --- SRV-THROTTLE: the bracket's throttle accumulators, as its check reads them ----------------
@dataclass(frozen=True)
class Throttled:
    """What rose on one node's GPUs while the stages SRV-THROTTLE judges ran (the bracket,
    rackgate/fixtures/bracket.py), with the GPUs its latest snapshot listed."""
    node: str
    rises: dict[str, list[Rise]]  # stage -> its rises, of the stages that ran
    gpus: tuple[str, ...]         # the GPUs' labels, as the latest snapshot read them
    unread: str = ""              # why amd-smi's throttle counters were not read ("" when they were)


def throttle_stages(on: On) -> Throttled:
    """SRV-THROTTLE's probe: the rises charged to its stages on this node (could-not-observe when
    none ran or a snapshot could not be read)."""
    rises = on.charged(row("SRV-THROTTLE").brackets)  # closes the stage: the latest snapshot is its end
    snap = on.bracket().latest(on.node) if on.bracket is not None else None
    return Throttled(on.node, rises, tuple(g.label for g in snap.gpus) if snap is not None else (),
                     snap.throttle_error if snap is not None else "")
