"""Follow a file on a node as a live stream (tail -F through the node's transport, in pexpect).

The same layers as a Host's runner -- local, ssh, docker exec -- but the process stays open and
its output is read line by line as it is written. Every stream is bounded: the far side runs
under `timeout`, and close() ends the local process (ssh or sh) we started.
"""
from __future__ import annotations

import os
import shlex
import signal
import time

import pexpect

from ..transport import Host
from ..transport.runners import ContainerRunner, LocalRunner, SshRunner


def _argv(runner, cmd: str) -> tuple[list[str], dict | None]:
    if isinstance(runner, ContainerRunner):
        envs = " ".join(f"-e {shlex.quote(f'{k}={v}')}" for k, v in runner.env.items())
        inner = f"docker exec -i {envs} {shlex.quote(runner.container)} sh -c {shlex.quote('exec ' + cmd)}"
        return _argv(runner.below, inner)
    if isinstance(runner, SshRunner):
        return ["ssh", *runner.opts, runner.target, getattr(runner, "exports", "") + cmd], None
    if isinstance(runner, LocalRunner):
        return ["sh", "-c", "exec " + cmd], runner.env
    raise TypeError(f"cannot stream through a {type(runner).__name__}")


class LineStream:
    """`tail -n +1 -F FILE` on a node; readline() returns a line, '' on timeout, None at EOF."""

    def __init__(self, host: Host, path: str, bound_s: float):
        # --foreground: timeout stays in our process group, so ending the group ends tail too
        cmd = f"timeout --foreground {max(1, int(bound_s))} tail -n +1 -F {host.qpath(path)} 2>&1"
        argv, env = _argv(host.runner, cmd)
        self.where = host.name
        self.child = pexpect.spawn(argv[0], argv[1:], env=env or dict(os.environ), encoding="utf-8",
                                   codec_errors="replace", echo=False, timeout=None, maxread=65536)

    @property
    def pid(self) -> int:
        return self.child.pid

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
        self.child.close(force=False) if not self.child.isalive() else None
        said = (self.child.before or "").strip().splitlines()
        return f"{said[-1][:200] if said else 'no output'} (exit status {self.child.exitstatus})"

    def close(self) -> None:
        """End the process group we started (pexpect's child leads its own session)."""
        try:
            os.killpg(self.child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.child.close(force=True)


def wait_for(predicate, timeout: float, poll: float = 0.2):
    """Poll predicate() until it returns a truthy value or the deadline passes (returns None)."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll)
