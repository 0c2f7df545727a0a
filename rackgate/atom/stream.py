"""Follow a file on a node as a live stream (tail -F through the node's transport, in pexpect).

The process is the one the host's runner builds (local, ssh, docker exec over either) -- this
module never knows which. It stays open and its output is read line by line as it is written.
Every stream is bounded: the far side runs under `timeout`, and close() ends the local process
group we started.
"""
from __future__ import annotations

import os
import signal

import pexpect

from ..transport import Host
from ..transport.deadline import wait_for

__all__ = ["LineStream", "wait_for"]


class LineStream:
    """`tail -n +1 -F FILE` on a node; readline() returns a line, '' on timeout, None at EOF."""

    def __init__(self, host: Host, path: str, bound_s: float):
        bound = str(max(1, int(bound_s)))
        # --foreground: timeout stays in our process group, so ending the group ends tail too
        argv = host.argv(["sh", "-c", 'exec timeout --foreground "$1" tail -n +1 -F "$2" 2>&1', "sh",
                          bound, host.path(path)])
        self.where = host.name
        self.child = pexpect.spawn(argv[0], argv[1:], env=dict(os.environ), encoding="utf-8",
                                   codec_errors="replace", echo=False, timeout=None, maxread=65536)

    @property
    def pid(self) -> int:
        pid = self.child.pid
        assert pid is not None  # pexpect.spawn has started it
        return pid

    def readline(self, timeout: float) -> str | None:
        try:
            idx = self.child.expect(["\r?\n", pexpect.EOF], timeout=timeout)
        except pexpect.TIMEOUT:
            return ""
        if idx == 1:
            rest = self.child.before
            return rest if rest else None
        return self.child.before

    def why_ended(self) -> str:
        """What the stream's command said before it ended (ssh/docker errors), and its status."""
        if not self.child.isalive():
            self.child.close(force=False)
        said = (self.child.before or "").strip().splitlines()
        return f"{said[-1][:200] if said else 'no output'} (exit status {self.child.exitstatus})"

    def close(self) -> None:
        """End the process group we started (pexpect's child leads its own session)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.child.close(force=True)
