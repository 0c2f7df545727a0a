"""Shared-memory segments under /dev/shm that a crashed run leaves behind (PSM, NCCL)."""
from __future__ import annotations

from dataclasses import dataclass

from ..access import NodeAccess
from ..errors import CouldNotObserve, UnrecognisedOutput
from .target import On


@dataclass(frozen=True)
class Segment:
    path: str
    size: int | None
    mtime: int | None


def parse_stat(text: str) -> list[Segment]:
    """`stat -c '%s %Y %n'` lines -> segments."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split(" ", 2)
        if len(parts) == 3 and parts[0].isdecimal() and parts[1].isdecimal():
            out.append(Segment(parts[2], int(parts[0]), int(parts[1])))
    return out


def segments(host: NodeAccess, globs: list[str]) -> list[Segment]:
    dirs = sorted({g.rsplit("/", 1)[0] or "/" for g in globs})
    absent = [d for d in dirs if not host.exists(d)]
    if absent:  # nothing listed is not "no segment": the directory itself was not there
        raise CouldNotObserve(f"node {host.name}: {absent[0]} does not exist: no segment list to read")
    paths = [p for g in globs for p in host.glob(g)]
    if not paths:
        return []
    stamped = host.stat(paths, "%s %Y")
    segs = parse_stat("".join(f"{v} {p}\n" for p, v in stamped.items() if v))
    if not segs:
        raise UnrecognisedOutput(f"node {host.name}: stat printed no size for {len(paths)} segment(s) found")
    return segs


def stale(on: On) -> list[Segment]:
    """PLAT-SHM's probe: the segments matching the rack file's platform.shm_globs."""
    return segments(on.host, on.rack.platform.shm_globs)
