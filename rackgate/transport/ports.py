"""Free TCP ports on this machine (for servers and listeners the suite and the sim start)."""
from __future__ import annotations

import random
import socket


def _bindable(ports: range, host: str) -> bool:
    socks = []
    try:
        for p in ports:
            so = socket.socket()
            socks.append(so)
            so.bind((host, p))
        return True
    except OSError:
        return False
    finally:
        for so in socks:
            so.close()


def free_port(host: str = "127.0.0.1", span: int = 1, below: int = 0) -> int:
    """A port p with p-below .. p+span-1 all free right now. span=1, below=0: the kernel picks.
    A range starts at random (sims built at the same moment do not pick the same one)."""
    if span == 1 and below == 0:
        with socket.socket() as s:
            s.bind((host, 0))
            return s.getsockname()[1]
    rnd = random.Random()
    for _ in range(200):
        base = rnd.randrange(20000 + below, 60000 - span)
        if _bindable(range(base - below, base + span), host):
            return base
    raise RuntimeError(f"no {span + below} consecutive free ports found on {host}")
