"""How a probe reaches a node: the interface it is handed (`NodeAccess`), what a command gives
back (`Result`) and the one bounded wait (`wait_for`). A probe names these only, never
`rackgate.transport` (pyproject.toml's `probes-reach-nodes-through-access` contract): the
transport's `Host` is one implementation (ssh, docker exec, local, the sim's sysroot), handed in by
the items as `On.host`. So a judgment, which imports a probe module's types and parser, never
imports a way to reach a node (`judgments-do-no-io`, with no ignored import).
"""
from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable, Protocol, TypeVar

from .errors import CouldNotObserve, ToolMissing, UnrecognisedOutput

T = TypeVar("T")

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


class NodeAccess(Protocol):
    """A node (or its container) as a probe reads it; paths are node paths (the access applies any
    sysroot). rackgate.transport.Host is the implementation; a self-test may hand in its own."""
    name: str

    def run(self, cmd: Sequence[str], timeout: float | None = None, stdin: str | None = None) -> Result: ...
    def shell(self, script: str, *args: str, timeout: float | None = None, stdin: str | None = None) -> Result: ...
    def path(self, p: str) -> str: ...
    def node_path(self, p: str) -> str: ...
    def node_text(self, text: str) -> str: ...
    def read(self, p: str, privileged: bool = False) -> str | None: ...
    def read_many(self, paths: list[str], privileged: bool = False) -> dict[str, str | None]: ...
    def exists(self, p: str) -> bool: ...
    def glob(self, pattern: str) -> list[str]: ...
    def stat(self, paths: list[str], fmt: str = "%s") -> dict[str, str | None]: ...
    def mtime(self, p: str) -> int | None: ...
    def find(self, root: str, name: str, newer_than: int | None = None) -> list[str]: ...
    def now(self) -> int | None: ...
    @property
    def is_root(self) -> bool: ...
    def container(self, name: str, sysroot: str = "", env: dict[str, str] | None = None) -> "NodeAccess": ...


class Deadline:
    """A point in monotonic time: `left()` seconds remain, `passed()` once it is reached."""

    def __init__(self, seconds: float):
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.at


def wait_for(predicate: Callable[[], T], timeout: float, poll: float = 0.2) -> T | None:
    """Poll predicate() until it returns a truthy value (returned) or the deadline passes (None).
    It is always asked at least once, and once more at the deadline."""
    deadline = Deadline(timeout)
    while True:
        got = predicate()
        if got:
            return got
        if deadline.passed():
            return None
        time.sleep(min(poll, max(0.01, deadline.left())))
