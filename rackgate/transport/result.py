"""What a command on a node gives back, and the errors that mean 'could not observe'."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CouldNotObserve


@dataclass(frozen=True)
class Result:
    """A command's outcome as a value: run() never raises on a non-zero rc."""
    node: str
    command: str
    rc: int
    stdout: str
    stderr: str
    duration: float

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def evidence(self) -> str:
        """Text for a report attachment: what ran, where, and what it said."""
        err = f"\n--- stderr ---\n{self.stderr}" if self.stderr.strip() else ""
        return f"$ {self.command}    # on {self.node}, rc={self.rc}, {self.duration:.2f}s\n{self.stdout}{err}"


class TransportError(CouldNotObserve):
    """The suite could not reach the node or run the command (not a verdict on the node)."""

    def __init__(self, node: str, message: str):
        super().__init__(f"node {node}: {message}")
        self.node = node


class CommandTimeout(TransportError):
    """The command did not finish within its bound; the partial output is kept."""

    def __init__(self, node: str, command: str, timeout: float, stdout: str = "", stderr: str = ""):
        super().__init__(node, f"command did not finish within {timeout:g}s: {command[:120]}")
        self.command, self.timeout, self.stdout, self.stderr = command, timeout, stdout, stderr
