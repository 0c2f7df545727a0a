"""The amdgpu UALink sysfs attributes under /sys/class/drm/cardN/device/ualink/."""
from __future__ import annotations

from dataclasses import dataclass

from ..transport import Host

ATTRS = ("accel_state", "accel_id", "link_type", "ppod_id", "vpod_id", "local_accels", "station_lane_en_bitmap")
UNSET_U32 = 4294967295  # UINT32_MAX: the driver's "not assigned yet"


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

    def summary(self) -> str:
        return (f"accel_state={self.accel_state} accel_id={self.accel_id_raw} link_type={self.link_type} "
                f"ppod_id={self.ppod_id} vpod_id={self.vpod_id}")


def parse_u32(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        v = int(raw.strip(), 0)
    except ValueError:
        return None
    return None if v == UNSET_U32 else v


def parse_link(card: int, raw: dict[str, str | None]) -> Link:
    val = {k: (None if raw.get(k) is None else raw[k].strip()) for k in ATTRS}
    return Link(card, val["accel_state"], parse_u32(val["accel_id"]), val["accel_id"], val["link_type"],
                val["ppod_id"], val["vpod_id"], val["local_accels"], val["station_lane_en_bitmap"])


def base(card: int) -> str:
    return f"/sys/class/drm/card{card}/device/ualink"


def read_link(host: Host, card: int) -> Link:
    paths = [f"{base(card)}/{a}" for a in ATTRS]
    raw = host.read_many(paths, privileged=True)
    return parse_link(card, {a: raw[p] for a, p in zip(ATTRS, paths)})


def read_links(host: Host, cards: range) -> list[Link]:
    paths = [f"{base(c)}/{a}" for c in cards for a in ATTRS]
    raw = host.read_many(paths, privileged=True)
    return [parse_link(c, {a: raw[f"{base(c)}/{a}"] for a in ATTRS}) for c in cards]
