"""How a shell command reaches a node: locally, over the system ssh client, inside a container.

Each runner turns a shell command into a process on this machine. Layers compose: a container
runner wraps the command in `docker exec` and hands it to the runner below (local or ssh).
Every command is bounded: a local process group is ended at its deadline, and on the far side
the command runs under coreutils `timeout`, so a dropped ssh connection does not leave remote
work behind.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time

from .procs import REGISTRY, kill_group
from .result import CommandTimeout, Result, TransportError

KILL_AFTER_S = 5


def _bounded(cmd: str, timeout: float) -> str:
    return f"timeout -k {KILL_AFTER_S} {max(1, int(timeout + 0.999))} sh -c {shlex.quote(cmd)}"


def _timed_out_remotely(res: Result, cmd: str, timeout: float) -> Result:
    """coreutils `timeout` on the far side exits 124 (TERM) or 137 (KILL) at the bound."""
    if res.rc in (124, 137) and res.duration >= timeout * 0.9:
        raise CommandTimeout(res.node, cmd, timeout, res.stdout, res.stderr)
    return res


def _run_process(node: str, argv: list[str], shown: str, timeout: float, env: dict | None,
                 stdin: str | None) -> Result:
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                start_new_session=True, text=True, errors="replace")
    except OSError as e:
        raise TransportError(node, f"cannot start {argv[0]}: {e.strerror}") from None
    REGISTRY.add_local(proc)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc, grace=1.0)
        out, err = proc.communicate()
        raise CommandTimeout(node, shown, timeout, out or "", err or "") from None
    finally:
        REGISTRY.drop_local(proc)
    return Result(node, shown, proc.returncode, out, err, time.monotonic() - t0)


class LocalRunner:
    """This machine. `env` adds to (and may reference, as $VAR) the suite's own environment."""

    kind = "local"

    def __init__(self, node: str, env: dict[str, str] | None = None):
        self.node = node
        self.env = {**os.environ, **{k: os.path.expandvars(v) for k, v in (env or {}).items()}}

    def run(self, cmd: str, timeout: float, stdin: str | None = None) -> Result:
        res = _run_process(self.node, ["sh", "-c", cmd], cmd, timeout, self.env, stdin)
        return res


class SshRunner:
    """The system OpenSSH client: the user's ~/.ssh/config, jump hosts, agent and keys apply.

    BatchMode (never prompt), ConnectTimeout, and a ControlMaster socket so the many small
    probes of a run share one connection. Host-key checking is left as the user's config has it.
    rc 255 is ssh's own failure (unreachable, auth refused, host key) and raises TransportError.
    """

    kind = "ssh"

    def __init__(self, node: str, target: str, connect_timeout_s: int = 10, options: list[str] = (),
                 control_dir: str | None = None, control_persist_s: int = 60, env: dict[str, str] | None = None):
        self.node, self.target = node, target
        # sshd drops the client's environment (no AcceptEnv by default): export on the far side.
        self.exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in (env or {}).items())
        self.control_dir, self.control_persist_s, self.connect_timeout_s = control_dir, control_persist_s, connect_timeout_s
        self._master_lock = threading.Lock()
        self._master_tried = False
        self.opts = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={connect_timeout_s}",
                     "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"]
        if control_dir:
            # Commands only ever *use* a master; it is started separately (see _ensure_master), because
            # a master forked by a command would hold that command's output pipes open.
            self.opts += ["-o", "ControlMaster=no", "-o", f"ControlPath={control_dir}/%C"]
        for o in options:
            self.opts += ["-o", o]

    def _ensure_master(self) -> None:
        """Start the shared connection once, detached from our pipes; without it commands connect
        on their own, so a failure here costs speed, never correctness."""
        if not self.control_dir:
            return
        with self._master_lock:
            if self._master_tried:
                return
            self._master_tried = True
            # ssh takes the first value given for an option: these must precede self.opts.
            argv = ["ssh", "-o", "ControlMaster=auto", "-o", f"ControlPersist={self.control_persist_s}",
                    *self.opts, "-f", "-N", self.target]
            try:
                subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=self.connect_timeout_s + 10)
            except subprocess.TimeoutExpired:
                pass
            REGISTRY.add_spawned(self)

    def run(self, cmd: str, timeout: float, stdin: str | None = None) -> Result:
        self._ensure_master()
        remote = _bounded(self.exports + cmd, timeout)
        argv = ["ssh", *self.opts, self.target, remote]
        res = _run_process(self.node, argv, cmd, timeout + KILL_AFTER_S + 15, None, stdin)
        if res.rc == 255:
            why = (res.stderr.strip().splitlines() or ["ssh exited 255"])[-1]
            raise TransportError(self.node, f"unreachable over ssh ({self.target}): {why}")
        return _timed_out_remotely(res, cmd, timeout)

    def stop(self) -> None:
        """Ask the control master to exit (it would anyway after ControlPersist)."""
        if self.control_dir and self._master_tried:
            subprocess.run(["ssh", *self.opts, "-O", "exit", self.target], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=10)
            self._master_tried = False
            REGISTRY.drop_spawned(self)


class ContainerRunner:
    """`docker exec` inside a named container, layered on the runner below (local or ssh)."""

    kind = "container"

    def __init__(self, below, container: str, env: dict[str, str] | None = None):
        self.below, self.container, self.env = below, container, env or {}
        self.node = below.node

    def run(self, cmd: str, timeout: float, stdin: str | None = None) -> Result:
        envs = " ".join(f"-e {shlex.quote(f'{k}={v}')}" for k, v in self.env.items())
        wrapped = f"docker exec -i {envs} {shlex.quote(self.container)} {_bounded(cmd, timeout)}"
        res = self.below.run(wrapped, timeout + KILL_AFTER_S + 5, stdin)
        if res.rc != 0 and ("No such container" in res.stderr or "is not running" in res.stderr
                            or "Cannot connect to the Docker daemon" in res.stderr):
            why = res.stderr.strip().splitlines()[-1]
            raise TransportError(self.node, f"container {self.container}: {why}")
        return _timed_out_remotely(Result(res.node, cmd, res.rc, res.stdout, res.stderr, res.duration), cmd, timeout)
