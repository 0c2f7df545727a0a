"""Shared-memory segments under /dev/shm that a crashed run leaves behind (PSM, NCCL)."""
from __future__ import annotations

from dataclasses import dataclass

from ..transport import Host


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


def segments(host: Host, globs: list[str]) -> list[Segment]:
    paths = [p for g in globs for p in host.glob(g)]
    stamped = host.stat(paths, "%s %Y")
    return parse_stat("".join(f"{v} {p}\n" for p, v in stamped.items() if v))
