"""Shared-memory segments under /dev/shm that a crashed run leaves behind (PSM, NCCL)."""
from __future__ import annotations

import shlex
from dataclasses import dataclass

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
        if len(parts) == 3 and parts[0].isdecimal() and parts[1].isdecimal():
            path = parts[2][len(sysroot):] if sysroot and parts[2].startswith(sysroot) else parts[2]
            out.append(Segment(path, int(parts[0]), int(parts[1])))
    return out


def segments(host: Host, globs: list[str]) -> list[Segment]:
    paths = [host.path(p) for g in globs for p in host.glob(g)]
    if not paths:
        return []
    res = host.run("stat -c '%s %Y %n' " + " ".join(shlex.quote(p) for p in paths) + " 2>/dev/null; true", timeout=30)
    return parse_stat(res.stdout, host.sysroot)
