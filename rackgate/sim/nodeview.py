"""The rack as the sim's node executables see it: state.json as plain JSON.

Every probe on the sim runs one of these executables (amd-smi, lsmod, dmesg, docker, ps, the
ubench07 tools), thousands of times per self-test run, each a fresh process: this module and the
ones they import use the standard library only, with no dataclasses, so a call starts in tens of
milliseconds. A reading tool imports nothing here beyond `os` and the C half of `json`
(`_json`): `json`, `re` and `pathlib` would be two thirds of its start-up (about 17 of 27 ms a
call on the self-tests' 2-core machine), so they are imported where a writer or a path needs
them. The build side (rackgate.sim.state: typed dataclasses) writes what they read here.
"""
from __future__ import annotations

import fcntl
import os

try:  # the json module's own C scanner, without the json package (which imports re)
    from _json import make_scanner as _make_scanner
except ImportError:  # an interpreter without it reads through json
    _make_scanner = None

STATE_FILE = "state.json"


class _Strict:
    """What json.JSONDecoder hands its C scanner: json.loads' defaults."""
    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = _make_scanner(_Strict()) if _make_scanner else None


def loads(text: str):
    """json.loads(text), through the scanner json.loads itself uses."""
    if _scan is None:
        import json
        return json.loads(text)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        obj, end = _scan(text, start)
    except StopIteration:
        raise ValueError(f"{STATE_FILE}: not JSON (at character {start})") from None
    if text[end:].strip(" \t\n\r"):
        raise ValueError(f"{STATE_FILE}: extra data after the JSON value (at character {end})")
    return obj


def node_dir():
    """Inside a sim executable: this node's directory (set in the node's environment), a Path."""
    from pathlib import Path
    return Path(os.environ["RACKGATE_SIM_NODE"])


def load(rack_dir) -> dict:
    """state.json as plain JSON (rack_dir: a Path or a str)."""
    with open(os.path.join(rack_dir, STATE_FILE), encoding="utf-8") as f:
        return loads(f.read())


def save(rack_dir, data: dict) -> None:
    import json
    tmp = os.path.join(rack_dir, STATE_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=1))
    os.replace(tmp, os.path.join(rack_dir, STATE_FILE))
    for name, node in data.get("nodes", {}).items():
        if os.path.isdir(os.path.join(rack_dir, name)):  # render_node writes a new node's
            write_kmsg(os.path.join(rack_dir, name), node)


# Each node's kernel ring buffer as `dmesg` prints it by default, beside state.json: the node's
# `dmesg` launcher prints it without starting Python (rackgate/sim/tools/dmesg.py `front`). The
# product reads dmesg around every ubench07 round (a cursor before, the new lines after), ~40 times
# a fabric run. Written wherever the lines change: here (save() is the only writer of state.json)
# and by render_node.
KMSG_FILE = "dmesg.txt"


def kmsg_text(node: dict) -> str:
    """node["dmesg"] as `dmesg` prints it by default: `[seconds.micros] text` a line."""
    return "".join(f"[{t:12.6f}] {line}\n" for t, line in node["dmesg"])


def write_kmsg(node_dir, node: dict) -> None:
    """The node's KMSG_FILE, replaced whole (a reader sees the old text or the new) when it changed."""
    path = os.path.join(node_dir, KMSG_FILE)
    text = kmsg_text(node)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def this_node() -> tuple[str, dict, dict]:
    """(node name, node state, whole state) for the executable running now."""
    d = os.environ["RACKGATE_SIM_NODE"].rstrip("/")
    state = load(os.path.dirname(d))
    name = os.path.basename(d)
    return name, state["nodes"][name], state


class locked:
    """Exclusive use of state.json (executables on several nodes append to it at once):
    `with locked(rack_dir): ...`."""

    def __init__(self, rack_dir):
        self.path = os.path.join(rack_dir, "state.lock")

    def __enter__(self) -> None:
        self.f = open(self.path, "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)

    def __exit__(self, *exc) -> None:
        try:
            fcntl.flock(self.f, fcntl.LOCK_UN)
        finally:
            self.f.close()
