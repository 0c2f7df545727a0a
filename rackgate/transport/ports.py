"""Free TCP ports on this machine, for servers and listeners the suite and the sim start later.

A port chosen now is bound by another process seconds later (a model server, an sshd, the sim's
collective). Two things could take it in between, and both are ruled out here:
- anything that binds port 0 or connects out: the kernel hands those ports from its ephemeral
  range (/proc/sys/net/ipv4/ip_local_port_range), so a chosen port never lies in that range;
- another chooser on this machine (another sim, another xdist worker): each chosen port, or
  slot of ports for a run, is claimed by a file under /tmp until HOLD_S have passed, and is not
  chosen again while its claim stands.
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
SLOT = 64  # a run of ports (the sim's collectives) takes one aligned slot of this many
# one directory for every process on the machine, whatever its TMPDIR says
CLAIMS = Path("/tmp" if os.access("/tmp", os.W_OK) else tempfile.gettempdir()) / "rackgate-ports"


def ephemeral_range() -> range:
    """The ports the kernel hands to binds of port 0 and to outgoing connections."""
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        lo, hi = 32768, 60999  # Linux's default
    return range(lo, hi + 1)


def _layout() -> tuple[range, range]:
    """(single ports, starts of the slots for runs): the larger side outside the ephemeral range,
    a quarter for single ports and the rest in aligned slots. Runs claimed port by port at random
    places would leave no room for the next run after a few hundred sims; slots do not fragment."""
    eph = ephemeral_range()
    side = max(range(LOWEST, eph.start), range(eph.stop, 65536), key=len)
    cut = side.start + len(side) // 4
    first_slot = -(-cut // SLOT) * SLOT
    return range(side.start, cut), range(first_slot, side.stop - SLOT + 1, SLOT)


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


def _claim(name: str, now: float) -> bool:
    path = CLAIMS / name
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


def free_port(host: str = "127.0.0.1", span: int = 1, below: int = 0) -> int:
    """A port p with p-below .. p+span-1 all free now, outside the kernel's ephemeral range, and
    claimed for HOLD_S so that no other chooser on this machine gets any of them meanwhile.
    Random: sims built at the same moment do not try the same ports first."""
    width = span + below
    if not 1 <= width <= SLOT:
        raise ValueError(f"free_port: a run of {width} ports (1 to {SLOT} can be chosen)")
    singles, slots = _layout()
    CLAIMS.mkdir(mode=0o1777, parents=True, exist_ok=True)
    now = time.time()
    _sweep(now)
    rnd = random.Random()
    if width == 1:
        for _ in range(400):
            p = rnd.choice(singles)
            if _bindable(range(p, p + 1), host) and _claim(f"p{p}", now):
                return p
        where = f"{singles.start}-{singles.stop - 1}"
    else:
        for s in rnd.sample(slots, len(slots)):
            if _bindable(range(s, s + width), host) and _claim(f"s{s}", now):
                return s + below
        where = f"the {len(slots)} slots of {SLOT} from {slots.start}"
    raise RuntimeError(f"no {width} consecutive free unclaimed ports on {host} in {where} "
                       f"(claims: {CLAIMS})")
