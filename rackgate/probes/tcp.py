"""Listening TCP sockets (PLAT-FREE: the ports the bring-up needs), read from /proc/net/tcp and
/proc/net/tcp6 (a file read: no ss/netstat needed on the node, and the node's sysroot applies).

Kernel format (one socket a line after the header): `sl local_address rem_address st ...`, the
local address as hex `ADDR:PORT` (IPv4 a little-endian u32, IPv6 four of them), `st` the TCP
state in hex, 0A being LISTEN.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..access import NodeAccess
from ..errors import UnrecognisedOutput

LISTEN = "0A"
FILES = ("/proc/net/tcp", "/proc/net/tcp6")


@dataclass(frozen=True)
class Listener:
    addr: str
    port: int


def _addr(hexaddr: str) -> str:
    if len(hexaddr) == 8:
        b = bytes.fromhex(hexaddr)[::-1]
        return ".".join(str(x) for x in b)
    words = [bytes.fromhex(hexaddr[i:i + 8])[::-1].hex() for i in range(0, 32, 8)]
    full = "".join(words)
    if full == "0" * 32:
        return "[::]"
    return "[" + ":".join(full[i:i + 4] for i in range(0, 32, 4)) + "]"


def parse(text: str, source: str = "/proc/net/tcp") -> list[Listener]:
    """Listening sockets of one file. A file without its header is not recognised."""
    lines = text.splitlines()
    if not lines or "local_address" not in lines[0]:
        raise UnrecognisedOutput(f"{source}: no 'local_address' header: {text.strip()[:120]!r}")
    out = []
    for line in lines[1:]:
        f = line.split()
        if len(f) < 4 or ":" not in f[1]:
            continue
        addr, _, port = f[1].partition(":")
        if f[3].upper() != LISTEN:
            continue
        try:
            out.append(Listener(_addr(addr), int(port, 16)))
        except ValueError:
            raise UnrecognisedOutput(f"{source}: cannot read the address {f[1]!r}") from None
    return out


def listeners(host: NodeAccess) -> list[Listener]:
    """Every listening TCP socket of the node (IPv4 and IPv6); tcp6 may be absent (no IPv6)."""
    raw = host.read_many(list(FILES))
    v4, v6 = raw[FILES[0]], raw[FILES[1]]
    if v4 is None:
        raise UnrecognisedOutput(f"node {host.name}: {FILES[0]} is missing: cannot list listening sockets")
    return parse(v4, FILES[0]) + (parse(v6, FILES[1]) if v6 is not None else [])
