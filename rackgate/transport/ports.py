"""Free TCP ports on this machine, for servers and listeners the suite and the sim start later.

A port chosen now is bound by another process seconds later (a model server, an sshd, the sim's
collective). Two things could take it in between, and both are ruled out here:
- anything that binds port 0 or connects out: the kernel hands those ports from its ephemeral
  range (/proc/sys/net/ipv4/ip_local_port_range), so a chosen port never lies in that range;
- another chooser on this machine (another sim, another xdist worker): each chosen port is
  claimed by a file under the temp directory until HOLD_S have passed, and a claimed port is
  never chosen again while its claim stands.
"""
from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from pathlib import Path

HOLD_S = 600.0  # a claim stands this long: time enough for the slowest server to bind its port
LOWEST = 15000  # chosen ports start here (below: the ports services are known by)
# one directory for every process on the machine, whatever its TMPDIR says
CLAIMS = Path("/tmp" if os.access("/tmp", os.W_OK) else tempfile.gettempdir()) / "rackgate-ports"


def ephemeral_range() -> range:
    """The ports the kernel hands to binds of port 0 and to outgoing connections."""
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        lo, hi = 32768, 60999  # Linux's default
    return range(lo, hi + 1)


def _pool(width: int) -> range:
    """Where a run of `width` ports may start: outside the ephemeral range, the larger side."""
    eph = ephemeral_range()
    below_side = range(LOWEST, eph.start - width + 1)
    above_side = range(eph.stop, 65536 - width + 1)
    return max(below_side, above_side, key=len)


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


def _claim_one(port: int, now: float) -> bool:
    path = CLAIMS / str(port)
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return True
        except FileExistsError:
            try:
                if now - path.stat().st_mtime < HOLD_S:
                    return False
                path.unlink()  # a stale claim: its owner bound the port long ago, or never will
            except FileNotFoundError:
                pass
    return False


def _sweep(now: float) -> None:
    """Forget claims that no longer stand (they would pile up run after run)."""
    for entry in os.scandir(CLAIMS):
        try:
            if now - entry.stat().st_mtime >= HOLD_S:
                os.unlink(entry.path)
        except FileNotFoundError:
            pass


def _claim(ports: range, now: float) -> bool:
    """Claim every port of the run, or none of them."""
    taken = []
    for p in ports:
        if not _claim_one(p, now):
            for q in taken:
                (CLAIMS / str(q)).unlink(missing_ok=True)
            return False
        taken.append(p)
    return True


def free_port(host: str = "127.0.0.1", span: int = 1, below: int = 0) -> int:
    """A port p with p-below .. p+span-1 all free now, outside the kernel's ephemeral range, and
    claimed for HOLD_S so that no other chooser on this machine gets any of them meanwhile.
    The start is random: sims built at the same moment do not try the same ports first."""
    pool = _pool(span + below)
    CLAIMS.mkdir(mode=0o1777, parents=True, exist_ok=True)
    now = time.time()
    _sweep(now)
    rnd = random.Random()
    for _ in range(400):
        first = rnd.choice(pool)
        run = range(first, first + below + span)
        if _bindable(run, host) and _claim(run, now):
            return first + below
    raise RuntimeError(f"no {span + below} consecutive free ports found on {host} "
                       f"in {pool.start}-{pool.stop - 1}")
