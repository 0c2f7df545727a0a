"""The suite's own errors: one base for "could not observe".

A verdict on the rack is `rackgate.report.verdict.CheckFailed` (FAILED). Everything that means
"the suite could not look" -- a node unreachable, a tool missing or exiting non-zero, an output
layout no parser recognises, nothing parsed where something was expected, a dependency check that
could not run -- is a `CouldNotObserve` (or a subclass), reported as ERROR in one line, never as a
diagnosis of the rack. Recognise them with isinstance, never by class name.

This module imports nothing from the rest of the package, so every layer (transport, probes,
atom, gates, report, fixtures) can raise these without import cycles.
"""
from __future__ import annotations

from collections.abc import Sized
from typing import TypeVar

R = TypeVar("R", bound=Sized)


class CouldNotObserve(RuntimeError):
    """The suite could not make the observation: ERROR, not FAILED. str() says which node, which
    tool or file, and what came back."""


class ToolMissing(CouldNotObserve):
    """An executable the check needs is not on the node (exit 127 / "not found").

    Never a fabric, driver or GPU diagnosis: the message names the executable, the node, and the
    rack-file key that names it (when one does)."""

    def __init__(self, node: str, tool: str, key: str | None = None, said: str = ""):
        self.node, self.tool, self.key = node, tool, key
        hint = f" (rack-file key {key})" if key else ""
        tail = f": {said.strip()[:200]}" if said.strip() else ""
        super().__init__(f"node {node}: {tool}{hint} is not installed or not executable{tail}")


class UnrecognisedOutput(CouldNotObserve):
    """A tool or file answered, but in a layout no parser recognises (or with nothing in it)."""


class NotRun(CouldNotObserve):
    """A check that depends on another could not run because that one failed or could not look;
    the message points at the root-cause check."""

    def __init__(self, root: str, why: str = ""):
        self.root, self.why = root, why
        super().__init__(f"not run: {root} {why or 'failed'} (see it)")


def require_records(records: R, what: str, where: str, came_back: str = "") -> R:
    """Refuse to judge nothing: return `records` when it holds at least one, else raise
    UnrecognisedOutput naming what was expected and where it was read from.

    Every judge calls this on its input before looping over it, so an empty parse (an unknown
    layout, an empty file, a tool that printed nothing) is ERROR, never a vacuous PASS.
        require_records(cards, "UALink cards", f"node {node}: /sys/class/drm/card*/device/ualink")
    """
    if records is None or len(records) == 0:
        tail = f"; it said: {came_back.strip()[:200]}" if came_back and came_back.strip() else ""
        raise UnrecognisedOutput(f"{where}: no {what} recognised{tail}")
    return records


class ServerBrokeLimit(Exception):
    """Positive evidence about a server, seen while reading its answer: it sent more than any answer
    to the request could be -- a stream past the request's own max_tokens, a body larger than the
    bound the request sets (rackgate/atom/bounded.py). The read stopped there and the connection was
    closed. A FAILED of the check that asked (rackgate/hooks/outcome.py), with the numbers; never
    could-not-observe (the suite did observe: the server broke the request's limit)."""

    def __init__(self, where: str, seen: str):
        self.where, self.seen = where, seen
        super().__init__(f"{where}: {seen}")


class ServerGone(CouldNotObserve):
    """A launched server whose process exited mid-run (the kernel's OOM killer: exit 137), read when
    its API stopped answering: positive evidence about the rack, SRV-ALIVE's. Raised in a check's call
    it is SRV-ALIVE's FAILED at `where` (rackgate/hooks/outcome.py), and the ordering then does not
    run the server's later checks (a dead rank: SRV-ALIVE); raised where a check could not start (a
    fixture's setup) it is could-not-observe with the same line."""

    row = "SRV-ALIVE"

    def __init__(self, where: str, seen: str):
        self.where, self.seen = where, seen
        super().__init__(f"{where}: {seen}")
