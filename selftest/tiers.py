"""The self-test tiers: what each self-test module costs, as a pytest marker, and what follows
from it (selftest/conftest.py): the check that every module carries exactly one, the order in
which xdist hands the modules out, and the guard that keeps the `unit` tier free of processes.

Mark a module with `pytestmark = pytest.mark.<tier>` (in a list with its other marks):

- unit: nothing outside this process -- no subprocess, no sim boot, no listening socket
  (parsers, judges, properties, config, the catalogue). `python3 -m pytest selftest -m unit`.
- suite: runs the suite on the sim (selftest/harness.py), boots the sim, or starts any other
  process (a tool, ruff, mypy, a pytest collection).
- matrix: the fault matrices (a pool of suite runs each).
- realengine: a real model server (transformers serve on CPU), aiperf, lm-eval against it.
- system: sshd, dockerd, Slurm, network namespaces.

docs/DEVELOPING.md says which tier to run while changing what.
"""
from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

# Tier -> (what the module's tests cost, the order xdist hands its modules out: lower first).
# The longest groups go first (a matrix pool, the real engine's servers) so the other workers
# work through the rest beside them; the unit tier last (it fills the gaps at the end).
TIERS: dict[str, tuple[str, int]] = {
    "matrix": ("fault-matrix runners: a pool of suite runs on the sim", 0),
    "realengine": ("a real model server (transformers serve on CPU), aiperf, lm-eval", 1),
    "system": ("sshd, dockerd, Slurm, network namespaces", 2),
    "suite": ("runs the suite on the sim (selftest/harness.py), boots the sim, or starts other processes", 3),
    "unit": ("no subprocess, no sim boot, no server: parsers, judges, properties, config, catalogue", 4),
}


def tiers_of(node) -> list[str]:
    """The tier marks a module or an item carries (a module's pytestmark reaches every item of it)."""
    return [name for name in TIERS if node.get_closest_marker(name) is not None]


def problem(module_name: str, tiers: list[str]) -> str:
    """'' when a module carries exactly one tier, else one line naming it and what to do."""
    if len(tiers) == 1:
        return ""
    got = "no tier mark" if not tiers else f"{len(tiers)} tier marks ({', '.join(tiers)})"
    return (f"self-test module {module_name} carries {got}: give it exactly one of "
            f"{', '.join(TIERS)} (`pytestmark = pytest.mark.<tier>`; selftest/tiers.py)")


def order(item) -> int:
    """The place of an item's module in the hand-out order (its tier's; stable sort keeps the rest)."""
    found = tiers_of(item)
    return TIERS[found[0]][1] if len(found) == 1 else len(TIERS)


class OutsideUnitTier(RuntimeError):
    """A `unit` test started a process, built the sim or listened on a socket: mark it otherwise."""


@contextmanager
def unit_guard(nodeid: str) -> Iterator[None]:
    """While a `unit` test runs (its fixtures included): starting a process, building the sim or
    listening on a socket raises OutsideUnitTier naming the test, so a mis-marked test fails
    loudly instead of making the quick tier slow."""
    def refuse(what: str):
        def refused(*args, **kwargs):
            raise OutsideUnitTier(f"{nodeid} is marked `unit` but {what}: mark its module `suite` "
                                  "(or the tier it belongs to), or move the test (selftest/tiers.py)")
        return refused

    from rackgate.sim import rack as sim_rack
    patches = [(subprocess.Popen, "__init__", refuse("started a subprocess")),
               (socket.socket, "listen", refuse("listened on a socket (a server)")),
               (sim_rack, "build", refuse("built the sim"))]
    patches += [(os, name, refuse(f"called os.{name}"))
                for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve")
                if hasattr(os, name)]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    try:
        for obj, name, new in patches:
            setattr(obj, name, new)
        yield
    finally:
        for obj, name, old in saved:
            setattr(obj, name, old)
