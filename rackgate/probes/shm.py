"""Shared-memory segments under /dev/shm that a crashed run leaves behind (PSM, NCCL)."""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..errors import CouldNotObserve, UnrecognisedOutput
from ..transport import Host


@dataclass(frozen=True)
class Segment:
    path: str
    size: int | None
    mtime: int | None


def parse_stat(text: str, sysroot: str = "") -> list[Segment]:
    """`stat -c '%s %Y %n'` lines -> segments (paths without the sysroot)."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split(" ", 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            path = parts[2][len(sysroot):] if sysroot and parts[2].startswith(sysroot) else parts[2]
            out.append(Segment(path, int(parts[0]), int(parts[1])))
    return out


def segments(host: Host, globs: list[str]) -> list[Segment]:
    dirs = sorted({g.rsplit("/", 1)[0] or "/" for g in globs})
    absent = [d for d in dirs if not host.exists(d)]
    if absent:  # nothing listed is not "no segment": the directory itself was not there
        raise CouldNotObserve(f"node {host.name}: {absent[0]} does not exist: no segment list to read")
    paths = [host.path(p) for g in globs for p in host.glob(g)]
    if not paths:
        return []
    res = host.run("stat -c '%s %Y %n' " + " ".join(shlex.quote(p) for p in paths) + " 2>/dev/null; true", timeout=30)
    segs = parse_stat(res.stdout, host.sysroot)
    if not segs:
        raise UnrecognisedOutput(f"node {host.name}: stat printed no size for {len(paths)} segment(s) found: "
                                 f"{res.came_back()}")
    return segs
