"""The amdgpu UALink sysfs attributes under /sys/class/drm/cardN/device/ualink/.

Formats (amdgpu's ualink sysfs): accel_state and link_type are enum names ('unconfigured',
'ppod_configured', 'vpod_configured', 'ready', 'active', 'error'; 'UALoE', 'UALink'; 'invalid'
when out of range); accel_id, bandwidth, latency, vpod_id are %u; ppod_id is %pU (a UUID,
all-zero while unconfigured); local_accels is the ids separated by single spaces. The lane
bitmap moved: newer drivers have ualink/station_lane_en_bitmap, older ones
ualink/stations/lane_en_bitmap; it is kept as an opaque string (its shape varies with
partitioning: compare it, never match it against a fixed value).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from ..access import NodeAccess, wait_for
from ..errors import CouldNotObserve
from . import drm
from .target import On, Recorded

ATTRS = ("accel_state", "accel_id", "link_type", "ppod_id", "vpod_id", "local_accels", "station_lane_en_bitmap",
         "bandwidth", "latency")
# Older drivers: the same facts at other paths (attr -> path under ualink/).
FALLBACK = {"station_lane_en_bitmap": "stations/lane_en_bitmap", "local_accels": "setup/local_accels"}
UNSET_U32 = 4294967295  # UINT32_MAX: the driver's "not assigned yet"
# accel_state names still on the way to trained (the training wait applies to these only).
TRAINING_STATES = ("unconfigured", "configured", "ppod_configured", "vpod_configured")


def state_kind(state: str | None, active: Sequence[str], error: Sequence[str]) -> str:
    """'trained', 'error' (fail now), 'training' (wait), or 'unknown' (an attribute missing or a
    name the driver does not print: could not observe, never a fabric verdict)."""
    if state is None:
        return "unknown"
    s = state.strip()
    if s in active:
        return "trained"
    if s in error:
        return "error"
    if s.lower() in TRAINING_STATES:
        return "training"
    return "unknown"


@dataclass(frozen=True)
class Link:
    card: int
    accel_state: str | None
    accel_id: int | None  # None when unset (UINT32_MAX) or missing
    accel_id_raw: str | None
    link_type: str | None
    ppod_id: str | None
    vpod_id: str | None
    local_accels: str | None
    station_lane_en_bitmap: str | None
    bandwidth: str | None = None
    latency: str | None = None
    gpu: int | None = None  # the GPU this card is (rackgate.probes.drm), when read as a GPU
    bdf: str | None = None

    @property
    def label(self) -> str:
        return drm.label(self.gpu, self.card, self.bdf)

    def where(self, node: str) -> str:
        return f"{node}/{self.label}"

    def summary(self) -> str:
        return (f"accel_state={self.accel_state} accel_id={self.accel_id_raw} link_type={self.link_type} "
                f"ppod_id={self.ppod_id} vpod_id={self.vpod_id}")

    @property
    def local_accel_ids(self) -> list[int] | None:
        return parse_id_list(self.local_accels)

    @property
    def bitmap_nonzero(self) -> bool:
        return bitmap_nonzero(self.station_lane_en_bitmap)


def parse_u32(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        v = int(raw.strip(), 0)
    except ValueError:
        return None
    return None if v == UNSET_U32 else v


def parse_id_list(raw: str | None) -> list[int] | None:
    """'3 2 1 0' -> [3, 2, 1, 0]; None when missing or not a list of ids."""
    if raw is None:
        return None
    toks = raw.replace(",", " ").split()
    if not all(t.isdecimal() for t in toks):
        return None
    return [int(t) for t in toks]


def bitmap_nonzero(raw: str | None) -> bool:
    """True when a bitmap string (hex words, with or without 0x, any separators) has a set bit."""
    if raw is None:
        return False
    digits = re.sub(r"0x", "", raw.strip().lower())
    return any(c in "123456789abcdef" for c in digits)


def parse_link(card: int, raw: dict[str, str | None]) -> Link:
    val = {k: (None if (v := raw.get(k)) is None else v.strip()) for k in ATTRS}
    return Link(card, val["accel_state"], parse_u32(val["accel_id"]), val["accel_id"], val["link_type"],
                val["ppod_id"], val["vpod_id"], val["local_accels"], val["station_lane_en_bitmap"],
                val["bandwidth"], val["latency"])


def base(card: int) -> str:
    return f"/sys/class/drm/card{card}/device/ualink"


def _paths(card: int) -> list[str]:
    return [f"{base(card)}/{a}" for a in ATTRS] + [f"{base(card)}/{p}" for p in FALLBACK.values()]


def _pick(card: int, got: dict[str, str | None]) -> dict[str, str | None]:
    out = {a: got[f"{base(card)}/{a}"] for a in ATTRS}
    for attr, old in FALLBACK.items():
        if out[attr] is None:
            out[attr] = got[f"{base(card)}/{old}"]
    return out


def read_link(host: NodeAccess, card: int) -> Link:
    raw = host.read_many(_paths(card), privileged=True)
    return parse_link(card, _pick(card, raw))


def read_links(host: NodeAccess, cards: list[int]) -> list[Link]:
    raw = host.read_many([p for c in cards for p in _paths(c)], privileged=True)
    return [parse_link(c, _pick(c, raw)) for c in cards]


def read_gpu_link(host: NodeAccess, card: drm.Card, gpu: int) -> Link:
    return replace(read_link(host, card.card), gpu=gpu, bdf=card.bdf)


def read_gpu_links(host: NodeAccess, expected: int) -> list[Link]:
    """Every GPU's link, GPU g at index g (its card discovered, rackgate.probes.drm); could not
    observe when the node does not show exactly `expected` amdgpu cards."""
    gmap = drm.discover(host)
    cards = [gmap.card(g, expected) for g in range(expected)]
    links = read_links(host, [c.card for c in cards])
    return [replace(li, gpu=g, bdf=c.bdf) for g, (li, c) in enumerate(zip(links, cards))]


@dataclass
class Settled:
    """Links read until none was still training, or the wait ran out: the last read, the seconds
    waited, and one line per read (the evidence of the wait)."""
    links: list[Link]
    waited_s: float
    polls: list[str] = field(default_factory=list)


def wait_settled(read: Callable[[], list[Link]], active: Sequence[str], error: Sequence[str],
                 wait_s: float, poll_s: float) -> Settled:
    """Read the links (`read`: one GPU's or a node's) until none is in a training state
    ('unconfigured' is normal for tens of seconds after modprobe) or `wait_s` has passed, never
    longer. The one training wait of FAB-STATE: the pytest items and the survey both use it; what
    the last read means is gates/fabric.py link_state's call."""
    t0 = time.monotonic()
    got = Settled([], 0.0)

    def settled() -> bool:
        got.links = read()
        got.polls.append(f"{time.strftime('%H:%M:%S')} " + "; ".join(
            (f"{li.label}: " if li.gpu is not None else "") + li.summary() for li in got.links))
        return all(state_kind(li.accel_state, active, error) != "training" for li in got.links)

    wait_for(settled, wait_s, poll=poll_s)
    got.waited_s = time.monotonic() - t0
    return got


def settled(on: On) -> Settled:
    """Every GPU's link on the node, read until none is still training or fabric.state_wait_s has
    passed (FAB-POD's probe; the survey reads a tray's links with it)."""
    f = on.rack.fabric
    return wait_settled(lambda: read_gpu_links(on.host, on.rack.gpus_per_node), f.active_states,
                        f.error_states, f.state_wait_s, f.state_poll_s)


def settled_gpu(on: On) -> Settled:
    """FAB-STATE's probe: this GPU's link, read until it is no longer training or
    fabric.state_wait_s has passed."""
    if on.gpu is None or on.card is None:
        raise CouldNotObserve(f"{on.where}: no GPU to read the link of")
    f, card, gpu = on.rack.fabric, on.card, on.gpu
    return wait_settled(lambda: [read_gpu_link(on.host, card, gpu)], f.active_states, f.error_states,
                        f.state_wait_s, f.state_poll_s)


@dataclass(frozen=True)
class Trained:
    """FAB-TRAINING's reading of one node: every GPU's link (GPU g at index g), and the session's
    recorded baseline to compare them with (or that this run records one)."""
    links: list[Link]
    recorded: Recorded


def trained(on: On) -> Trained:
    """FAB-TRAINING's probe: the node's links as read now (no training wait: a link still training
    is FAB-STATE's finding), with the recorded baseline the session carries."""
    return Trained(read_gpu_links(on.host, on.rack.gpus_per_node), on.baseline())
