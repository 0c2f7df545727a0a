"""The errors that mean 'could not observe' a node (what a command gives back, `Result`, is
rackgate/access.py's: the interface probes read through)."""
from __future__ import annotations

from collections.abc import Sequence

from ..access import Result
from ..errors import CouldNotObserve

__all__ = ["CommandTimeout", "Result", "SpawnUnknown", "TransportError"]


class TransportError(CouldNotObserve):
    """The suite could not reach the node or run the command (not a verdict on the node)."""

    def __init__(self, node: str, message: str):
        super().__init__(f"node {node}: {message}")
        self.node = node


class SpawnUnknown(TransportError):
    """A start whose reply was lost or not understood: the process may be running, under a PID the
    suite does not know. `argv` is what was started (to recognise it later, never to end it)."""

    def __init__(self, node: str, argv: "Sequence[str]", message: str):
        super().__init__(node, message)
        self.argv = list(argv)


class CommandTimeout(TransportError):
    """The command did not finish within its bound; the partial output is kept."""

    def __init__(self, node: str, command: str, timeout: float, stdout: str = "", stderr: str = ""):
        super().__init__(node, f"command did not finish within {timeout:g}s: {command[:120]}")
        self.command, self.timeout, self.stdout, self.stderr = command, timeout, stdout, stderr
