"""What a command on a node gives back, and the errors that mean 'could not observe'."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CouldNotObserve, ToolMissing, UnrecognisedOutput

# How a shell, exec or the kernel says an executable is not there (rc 127 is the shell's own).
_MISSING_WORDS = re.compile(r"(command )?not found|No such file or directory|not executable|"
                            r"Permission denied|cannot execute", re.IGNORECASE)


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

    def came_back(self, limit: int = 200) -> str:
        """What the command said, in one line (stderr first), for an error message."""
        text = (self.stderr.strip() or self.stdout.strip()).replace("\n", " | ")
        return text[:limit] if text else "no output"

    def require(self, tool: str | None = None, key: str | None = None, nonempty: bool = True) -> "Result":
        """This result, when it is usable; otherwise raise the "could not observe" that says why.

        - rc 126/127, or a non-zero rc whose words say the executable is missing
          ("not found", "No such file or directory") -> ToolMissing naming the node, the
          executable (`tool`, as the rack file gives it) and the rack-file `key` that names it;
        - any other non-zero rc -> CouldNotObserve naming the node, the command and what came back;
        - rc 0 with nothing on stdout (when `nonempty`) -> UnrecognisedOutput: a reading tool that
          says nothing has not said "healthy".
        A probe calls this before parsing, so no parser ever sees a failed tool's output.
        """
        name = tool or self.command.partition(" ")[0] or "?"
        if self.rc in (126, 127) or (self.rc != 0 and _MISSING_WORDS.search(self.stderr)
                                     and name.rsplit("/", 1)[-1] in self.stderr):
            raise ToolMissing(self.node, name, key, self.came_back())
        if self.rc != 0:
            raise CouldNotObserve(f"node {self.node}: `{self.command[:120]}` exited {self.rc}: {self.came_back()}")
        if nonempty and not self.stdout.strip():
            raise UnrecognisedOutput(f"node {self.node}: `{self.command[:120]}` exited 0 but printed nothing")
        return self

    def evidence(self) -> str:
        """Text for a report attachment: what ran, where, and what it said."""
        err = f"\n--- stderr ---\n{self.stderr}" if self.stderr.strip() else ""
        return f"$ {self.command}    # on {self.node}, rc={self.rc}, {self.duration:.2f}s\n{self.stdout}{err}"


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
