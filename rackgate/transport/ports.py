"""Free TCP ports on this machine, for servers and listeners the suite and the sim start later.

A port chosen now is bound by another process seconds later (a model server, an sshd, the sim's
collective). Two things could take it in between, and both are ruled out here:
- anything that binds port 0 or connects out: the kernel hands those ports from its ephemeral
  range (/proc/sys/net/ipv4/ip_local_port_range), so a chosen port never lies in that range;
- another chooser on this machine (another sim, another xdist worker): each chosen port, or
  slot of ports for a run, is claimed by a file under /tmp until HOLD_S have passed, and is not
  chosen again while its claim stands (a slot: while an unclaimed or older one is free).
"""
from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .procs import REGISTRY

HOLD_S = 600.0  # a claim stands this long: time enough for the slowest server to bind its port
LOWEST = 15000  # chosen ports start here (below: the ports services are known by)
LOCK = ".lock"
SLOT = 64  # a run of ports (the sim's collectives) takes one aligned slot of this many
# one directory for every process on the machine, whatever its TMPDIR says (RACKGATE_PORT_CLAIMS
# moves it: a self-test that checks an interrupted run leaves no claim reads its own)
CLAIMS = Path(os.environ.get("RACKGATE_PORT_CLAIMS")
              or Path("/tmp" if os.access("/tmp", os.W_OK) else tempfile.gettempdir()) / "rackgate-ports")


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


def _claimed_at(name: str) -> float:
    try:
        return (CLAIMS / name).stat().st_mtime
    except FileNotFoundError:
        return 0.0


class _Claims:
    """The claims this process made: released when the registry stops what the run started (the
    servers they were for are stopped by then), so a finished or interrupted run leaves none."""

    def __init__(self) -> None:
        self.names: dict[str, float] = {}

    def add(self, name: str) -> None:
        if not self.names:
            REGISTRY.add_spawned(self)
        self.names[name] = _claimed_at(name)

    def stop(self) -> None:
        for name, at in list(self.names.items()):
            try:
                if _claimed_at(name) == at:  # still ours, not claimed again since by another
                    os.unlink(CLAIMS / name)
            except FileNotFoundError:
                pass
        self.names.clear()
        REGISTRY.drop_spawned(self)


MINE = _Claims()


def _claim(name: str) -> None:
    (CLAIMS / name).touch()
    MINE.add(name)


def _sweep(now: float) -> None:
    """Forget claims that no longer stand (they would pile up run after run)."""
    for entry in os.scandir(CLAIMS):
        try:
            if entry.name != LOCK and now - entry.stat().st_mtime >= HOLD_S:
                os.unlink(entry.path)
        except FileNotFoundError:
            pass


@contextmanager
def _choosing() -> Iterator[None]:
    """One chooser at a time on this machine (held for milliseconds; the kernel drops the lock
    of a process that dies holding it)."""
    CLAIMS.mkdir(mode=0o1777, parents=True, exist_ok=True)
    with open(CLAIMS / LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def free_port(host: str = "127.0.0.1", span: int = 1, below: int = 0) -> int:
    """A port p with p-below .. p+span-1 all free now, outside the kernel's ephemeral range, and
    claimed for HOLD_S so that no other chooser on this machine gets any of them meanwhile.
    A run takes an unclaimed slot, or when every slot is claimed (hundreds of sims within
    HOLD_S) the one claimed longest ago. Random: sims built at once try different ports first."""
    width = span + below
    singles, slots = _layout()
    need = -(-width // SLOT)  # slots a run takes (an 18-node sim's collectives: 191 ports, 3 slots)
    if width < 1 or need > len(slots):
        raise ValueError(f"free_port: a run of {width} ports (1 to {len(slots) * SLOT} can be chosen)")
    rnd = random.Random()
    with _choosing():
        now = time.time()
        _sweep(now)
        if width == 1:
            for _ in range(400):
                p = rnd.choice(singles)
                if now - _claimed_at(f"p{p}") >= HOLD_S and _bindable(range(p, p + 1), host):
                    _claim(f"p{p}")
                    return p
            where = f"{singles.start}-{singles.stop - 1}"
        else:
            groups = [slots[i:i + need] for i in range(len(slots) - need + 1)]
            by_age = sorted(rnd.sample(groups, len(groups)), key=lambda g: max(_claimed_at(f"s{s}") for s in g))
            for g in by_age:
                if _bindable(range(g[0], g[0] + width), host):
                    for s in g:
                        _claim(f"s{s}")
                    return g[0] + below
            where = f"the {len(slots)} slots of {SLOT} from {slots.start}"
    raise RuntimeError(f"no {width} consecutive free ports on {host} in {where} (claims: {CLAIMS})")
