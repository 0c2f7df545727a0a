"""The GPUs a node sees and their HBM size: `amd-smi static --json`, or sysfs when amd-smi is absent.

amd-smi's JSON comes in two shapes across releases: a plain list of per-GPU objects (ROCm 6.x)
and {"gpu_data": [...]} (7.x). Each object carries "gpu" (index) and the sections asked for;
a value with a unit is {"value": N, "unit": "MB"}, a value the library could not read is "N/A".
VRAM size is in MB as amd-smi names it (mebibytes: 432 GiB reads 442368).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace

from ..access import NodeAccess
from ..errors import CouldNotObserve, UnrecognisedOutput
from . import amdsmi, drm
from .target import On

AMD_VENDOR = "0x1002"
# amd-smi's words when the library finds no GPU device (amdsmi_cli: "Unable to detect any GPU
# devices, check amdgpu version and module status"): the one failure that is a finding.
NO_GPU = re.compile(r"Unable to detect any GPU devices")
_UNIT_MIB = {"B": 1 / 2**20, "KB": 1 / 1024, "KIB": 1 / 1024, "MB": 1, "MIB": 1, "GB": 1024, "GIB": 1024,
             "TB": 2**20, "TIB": 2**20}


@dataclass(frozen=True)
class Gpu:
    index: int
    bdf: str | None
    market_name: str | None
    vram_mib: float | None  # None when not reported ("N/A")

    @property
    def hbm_gib(self) -> float | None:
        return None if self.vram_mib is None else self.vram_mib / 1024

    def summary(self) -> str:
        hbm = "HBM N/A" if self.hbm_gib is None else f"{self.hbm_gib:g} GiB"
        return f"gpu{self.index} {self.bdf or '?'} {hbm}"


class GpuListError(UnrecognisedOutput, ValueError):
    pass


def _number(v: str | float) -> float | None:
    """A finite float, or None (a JSON integer too large for a float is no reading)."""
    try:
        f = float(v)
    except (OverflowError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _value(v: object) -> tuple[float | None, str | None]:
    """amd-smi's {"value": N, "unit": U} / "N/A" / bare number / "N MB" -> (number, unit)."""
    if isinstance(v, dict):
        val, unit = v.get("value"), v.get("unit")
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            return _number(val), unit
        return _value(val)[0], unit
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _number(v), None
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", v)
        if m:
            return _number(m.group(1)), m.group(2) or None
    return None, None


def _mib(v: object) -> float | None:
    num, unit = _value(v)
    if num is None:
        return None
    factor = _UNIT_MIB.get((unit or "MB").upper())
    if factor is None:
        raise GpuListError(f"unknown VRAM unit {unit!r}")
    return num * factor


def _text(v: object) -> str | None:
    return v if isinstance(v, str) and v and v != "N/A" else None


def parse_amdsmi_static(text: str) -> list[Gpu]:
    """`amd-smi static [--asic --bus --vram] --json` -> GPUs, in index order."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise GpuListError(f"amd-smi printed no JSON ({e.msg} at char {e.pos}): {text.strip()[:120]!r}") from None
    data = amdsmi.gpu_list(data, GpuListError)
    gpus: list[Gpu] = []
    for pos, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise GpuListError(f"amd-smi JSON entry {pos} is a {type(entry).__name__}, not an object")
        idx = entry.get("gpu", pos)
        vram = v if isinstance(v := entry.get("vram"), dict) else {}
        bus = b if isinstance(b := entry.get("bus"), dict) else {}
        asic = a if isinstance(a := entry.get("asic"), dict) else {}
        gpus.append(Gpu(int(idx) if str(idx).isdecimal() else pos, _text(bus.get("bdf")),
                        _text(asic.get("market_name")), _mib(vram.get("size"))))
    return sorted(gpus, key=lambda g: g.index)


def parse_sysfs(cards: dict[int, dict[str, str | None]]) -> list[Gpu]:
    """{gpu: {"vendor": "0x1002", "mem_info_vram_total": bytes, "uevent": ...}} -> AMD GPUs."""
    gpus: list[Gpu] = []
    for card in sorted(cards):
        attrs = cards[card]
        if (attrs.get("vendor") or "").strip().lower() != AMD_VENDOR:
            continue
        total = (attrs.get("mem_info_vram_total") or "").strip()
        bdf = None
        for line in (attrs.get("uevent") or "").splitlines():
            if line.startswith("PCI_SLOT_NAME="):
                bdf = line.split("=", 1)[1].strip().lower()
        gpus.append(Gpu(card, bdf, None, int(total) / 2**20 if total.isdecimal() else None))
    return gpus


@dataclass(frozen=True)
class GpuFacts:
    gpus: list[Gpu]
    source: str     # "amd-smi" or "sysfs"
    raw: str        # what the source printed, for the evidence
    error: str = "" # amd-smi's own complaint when it sees no GPU


def read(host: NodeAccess) -> GpuFacts:
    res = host.run(["amd-smi", "static", "--asic", "--bus", "--vram", "--json"], timeout=120)
    if res.rc == 127:  # no amd-smi on this node: the driver's own sysfs view
        return _read_sysfs(host)
    if not res.ok and NO_GPU.search(res.stderr + res.stdout):
        # amd-smi's own finding that the driver presents no GPU: evidence about the node.
        why = next(ln for ln in (res.stderr + "\n" + res.stdout).splitlines() if NO_GPU.search(ln)).strip()
        return GpuFacts([], "amd-smi", res.evidence(), why)
    # Any other failure (e.g. exit 2 "unsupported: static ...") says nothing about the GPUs.
    res.require(tool="amd-smi")
    try:
        return GpuFacts(parse_amdsmi_static(res.stdout), "amd-smi", res.stdout)
    except GpuListError as e:
        raise CouldNotObserve(f"{host.name}: {e}") from None


def _read_sysfs(host: NodeAccess) -> GpuFacts:
    """The DRM cards bound to amdgpu (rackgate.probes.drm), GPU g the g-th in PCI order."""
    if not host.exists("/sys/class/drm"):
        raise CouldNotObserve(f"node {host.name}: no amd-smi and no /sys/class/drm to read the GPUs from")
    cards = drm.discover(host).gpus
    attrs = ("vendor", "mem_info_vram_total", "uevent")
    raw = host.read_many([f"/sys/class/drm/card{c.card}/device/{a}" for c in cards for a in attrs])
    per = {g: {a: raw[f"/sys/class/drm/card{c.card}/device/{a}"] for a in attrs} for g, c in enumerate(cards)}
    blank = [f"card{cards[g].card}" for g, d in per.items() if d["vendor"] is not None and not d["vendor"].strip()]
    if blank:
        raise UnrecognisedOutput(f"node {host.name}: /sys/class/drm/{blank[0]}/device/vendor is empty")
    text = "\n".join(f"{drm.label(g, cards[g].card, cards[g].bdf)}: {a}={(v or '').strip()[:80]}"
                     for g, d in per.items() for a, v in d.items() if a != "uevent")
    found = [g if g.bdf else replace(g, bdf=cards[g.index].bdf) for g in parse_sysfs(per)]  # the device link's name
    return GpuFacts(found, "sysfs", text)


@dataclass(frozen=True)
class Seen:
    """PLAT-GPUS's facts: what amd-smi (or sysfs) says about the GPUs, and the node's DRM cards
    (None, with why, when they could not be read: a finding about the GPUs still counts first)."""
    gpus: GpuFacts
    cards: drm.GpuMap | None
    unseen: CouldNotObserve | None


def seen(on: On) -> Seen:
    got = read(on.host)
    try:
        return Seen(got, drm.discover(on.host), None)
    except CouldNotObserve as e:
        return Seen(got, None, e)

