"""The rack as the sim's node executables see it: state.json as plain JSON.

Every probe on the sim runs one of these executables (amd-smi, lsmod, dmesg, docker, ps, the
ubench07 tools), thousands of times per self-test run, each a fresh process: this module and the
ones they import use the standard library only, with no dataclasses, so a call starts in tens of
milliseconds. The build side (rackgate.sim.state: typed dataclasses) writes what they read here.
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

STATE_FILE = "state.json"


def node_dir() -> Path:
    """Inside a sim executable: this node's directory (set in the node's environment)."""
    return Path(os.environ["RACKGATE_SIM_NODE"])


def load(rack_dir: Path) -> dict:
    """state.json as plain JSON."""
    return json.loads((rack_dir / STATE_FILE).read_text())


def save(rack_dir: Path, data: dict) -> None:
    tmp = rack_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(rack_dir / STATE_FILE)


def this_node() -> tuple[str, dict, dict]:
    """(node name, node state, whole state) for the executable running now."""
    d = node_dir()
    state = load(d.parent)
    return d.name, state["nodes"][d.name], state


@contextmanager
def locked(rack_dir: Path):
    """Exclusive use of state.json (executables on several nodes append to it at once)."""
    with open(rack_dir / "state.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
