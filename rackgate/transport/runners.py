"""How a command reaches a node: locally, over the system ssh client, inside a container.

A runner is one protocol (`Runner`): `argv(cmd, timeout)` turns the argv of a command *on the
node* into the argv of a process *on this machine* (`sh`, `ssh ...`, `docker exec ...` over
either). `run` executes it with a bound; spawning and line streaming use the same argv, so no
caller ever rebuilds an ssh or docker command line. Layers compose: a container runner wraps
the command in `docker exec` and hands the result to the runner below.

Environment values follow one rule on every runner (`with_env`): they are expanded *on the
node*, as a double-quoted shell word -- `$VAR` takes the node's value (the runbook's
`LD_LIBRARY_PATH=/app/rjprefix/lib:$LD_LIBRARY_PATH`), while `\\`, `"` and backquotes stay
literal. Every command is bounded: a local process group is ended at its deadline, and on the
far side the command runs under coreutils `timeout`, so a dropped ssh connection does not leave
remote work behind.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
from typing import Protocol, Sequence

from . import gone
from .procs import REGISTRY, Overran, run_bounded
from .result import CommandTimeout, Result, TransportError

KILL_AFTER_S = 5


def environ_copy(tries: int = 100) -> dict[str, str]:
    """A copy of os.environ that a thread may take while pytest's own thread sets and unsets
    PYTEST_CURRENT_TEST between tests (a boot watch's liveness polls, the self-tests' fault-matrix
    pool): copying os.environ while another thread deletes a key raises KeyError (its keys are listed,
    then read one by one) or RuntimeError (the dict changed size). Seen once in a whole self-test run
    under load (2026-12-05, wave 10: a matrix case ERRORed on KeyError 'PYTEST_CURRENT_TEST'). Such a
    change is over in microseconds: copy again, a bounded number of times."""
    for _ in range(tries - 1):
        try:
            return dict(os.environ)
        except (KeyError, RuntimeError):
            continue
    return dict(os.environ)  # the last try: an error now is not that race, and is raised


class Runner(Protocol):
    node: str
    kind: str

    def argv(self, cmd: Sequence[str], timeout: float | None = None) -> list[str]:
        """The local argv that runs `cmd` (an argv on the node), bounded on the node by timeout."""

    def run(self, cmd: Sequence[str], timeout: float, stdin: str | None = None) -> Result: ...


def as_argv(cmd: Sequence[str]) -> list[str]:
    """A command as argv. A str is refused: a command line built as text is how values get
    interpolated into a shell; a script goes through Host.shell(script, *args)."""
    if isinstance(cmd, str):
        raise TypeError(f"a command is an argv list, not a str ({cmd[:60]!r}): "
                        "use Host.shell(script, *args) for a shell script")
    return list(cmd)


def shown(cmd: Sequence[str]) -> str:
    """A command as a person reads it in evidence: `sh -c SCRIPT` shows the script."""
    cmd = as_argv(cmd)
    if len(cmd) == 3 and cmd[:2] == ["sh", "-c"]:
        return cmd[2]
    return shlex.join(cmd)


def dq(value: str) -> str:
    """A double-quoted shell word: `$VAR` expands where the shell runs; \\ " ` stay literal."""
    return '"' + "".join("\\" + c if c in '\\"`' else c for c in value) + '"'


def with_env(cmd: Sequence[str], env: dict[str, str] | None) -> list[str]:
    """`cmd` with `env` exported by a shell on the node (the one quoting rule for env values)."""
    if not env:
        return as_argv(cmd)
    exports = "".join(f"export {k}={dq(v)}; " for k, v in env.items())
    return ["sh", "-c", exports + 'exec "$@"', "sh", *cmd]


def bounded(cmd: Sequence[str], timeout: float | None) -> list[str]:
    """`cmd` under coreutils `timeout` on the node (TERM at the bound, KILL KILL_AFTER_S later)."""
    if timeout is None:
        return as_argv(cmd)
    return ["timeout", "-k", str(KILL_AFTER_S), str(max(1, int(timeout + 0.999))), *as_argv(cmd)]


def _timed_out_remotely(res: Result, timeout: float) -> Result:
    """coreutils `timeout` on the far side exits 124 (TERM) or 137 (KILL) at the bound."""
    if res.rc in (124, 137) and res.duration >= timeout * 0.9:
        raise CommandTimeout(res.node, res.command, timeout, res.stdout, res.stderr)
    return res


def run_process(node: str, argv: list[str], shown_as: str, timeout: float, stdin: str | None,
                env: dict[str, str] | None = None) -> Result:
    """Run a local process in its own group; at the deadline the whole group is ended."""
    try:
        done = run_bounded(argv, timeout, stdin=stdin, env=env)
    except OSError as e:
        raise TransportError(node, f"cannot start {argv[0]}: {e.strerror}") from None
    except Overran as e:
        raise CommandTimeout(node, shown_as, timeout, e.stdout, e.stderr) from None
    return Result(node, shown_as, done.rc, done.stdout, done.stderr, done.duration)


class LocalRunner:
    """This machine. `env` adds to the suite's own environment (expanded by the node's shell)."""

    kind = "local"

    def __init__(self, node: str, env: dict[str, str] | None = None):
        self.node, self.env = node, dict(env or {})

    def argv(self, cmd: Sequence[str], timeout: float | None = None) -> list[str]:
        # The local deadline ends the process group; no `timeout` wrapper is needed here.
        return with_env(cmd, self.env)

    def literal_env(self) -> dict[str, str] | None:
        """The process environment with `env` in it, when every value is literal text (no `$`, backquote
        or backslash: the node's shell would expand it to itself); None when one needs the shell.
        run() then starts the command with it directly: the exporting `sh` costs ~0.6 CPU ms a
        command, and a sim node's commands (its PATH, PYTHONPATH) are hundreds a suite run."""
        if any(c in v for v in self.env.values() for c in "$`\\"):
            return None
        return {**environ_copy(), **self.env}

    def run(self, cmd: Sequence[str], timeout: float, stdin: str | None = None) -> Result:
        env = self.literal_env() if self.env else None
        argv = as_argv(cmd) if env is not None else self.argv(cmd, timeout)
        try:
            return run_process(self.node, argv, shown(cmd), timeout, stdin, env)
        except TransportError:
            # Here "this machine" is the node: an executable it lacks (on the node's PATH) is the
            # node's missing tool, answered as the node's shell answers it (rc 127), exactly as over ssh.
            path = (env or os.environ).get("PATH")
            if shutil.which(argv[0], path=path) is None and not os.access(argv[0], os.X_OK):
                return Result(self.node, shown(cmd), 127, "", f"{argv[0]}: not found\n", 0.0)
            raise


class SshRunner:
    """The system OpenSSH client: the user's ~/.ssh/config, jump hosts, agent and keys apply.

    BatchMode (never prompt), ConnectTimeout, and a ControlMaster socket so the many small
    probes of a run share one connection. Host-key checking is left as the user's config has it.
    rc 255 is ssh's own failure (unreachable, auth refused, host key) and raises TransportError.
    """

    kind = "ssh"

    def __init__(self, node: str, target: str, connect_timeout_s: int = 10, options: Sequence[str] = (),
                 control_dir: str | None = None, control_persist_s: int = 60, env: dict[str, str] | None = None):
        self.node, self.target = node, target
        # sshd drops the client's environment (no AcceptEnv by default): exported on the far side.
        self.env = dict(env or {})
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
        self.gone_key = " ".join([*options, target])   # the node as ssh reaches it (its port, its config)

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

    def argv(self, cmd: Sequence[str], timeout: float | None = None) -> list[str]:
        self._ensure_master()
        # ssh hands the far side one string for its login shell: the argv, quoted once.
        return ["ssh", *self.opts, self.target, shlex.join(bounded(with_env(cmd, self.env), timeout))]

    def run(self, cmd: Sequence[str], timeout: float, stdin: str | None = None) -> Result:
        said = gone.check(self.gone_key)   # a node that stopped answering: said at once, re-tried on a schedule
        if said is not None:
            raise TransportError(self.node, f"unreachable over ssh ({self.target}): {said} (running `{shown(cmd)[:80]}`)")
        res = run_process(self.node, self.argv(cmd, timeout), shown(cmd), timeout + KILL_AFTER_S + 15, stdin)
        if res.rc == 255:
            why = (res.stderr.strip().splitlines() or ["ssh exited 255"])[-1]
            gone.failed(self.gone_key, why)
            raise TransportError(self.node, f"unreachable over ssh ({self.target}): {why} (running `{shown(cmd)[:80]}`)")
        gone.answered(self.gone_key)
        return _timed_out_remotely(res, timeout)

    def stop(self) -> None:
        """Ask the control master to exit (it would anyway after ControlPersist)."""
        if self.control_dir and self._master_tried:
            subprocess.run(["ssh", *self.opts, "-O", "exit", self.target], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=10)
            self._master_tried = False
            REGISTRY.drop_spawned(self)


_NO_CONTAINER = ("No such container", "is not running", "Cannot connect to the Docker daemon")


class ContainerRunner:
    """`docker exec` inside a named container, layered on the runner below (local or ssh)."""

    kind = "container"

    def __init__(self, below: Runner, container: str, env: dict[str, str] | None = None):
        if not container:
            raise ValueError("ContainerRunner needs a container name (container = \"\" runs on the node)")
        self.below, self.container, self.env = below, container, dict(env or {})
        self.node = below.node

    def _inner(self, cmd: Sequence[str], timeout: float | None) -> list[str]:
        return ["docker", "exec", "-i", self.container, *bounded(with_env(cmd, self.env), timeout)]

    def argv(self, cmd: Sequence[str], timeout: float | None = None) -> list[str]:
        return self.below.argv(self._inner(cmd, timeout), None if timeout is None else timeout + KILL_AFTER_S + 5)

    def run(self, cmd: Sequence[str], timeout: float, stdin: str | None = None) -> Result:
        res = self.below.run(self._inner(cmd, timeout), timeout + KILL_AFTER_S + 5, stdin)
        if res.rc != 0 and any(s in res.stderr for s in _NO_CONTAINER):
            why = res.stderr.strip().splitlines()[-1]
            raise TransportError(self.node, f"container {self.container}: {why}")
        return _timed_out_remotely(Result(res.node, shown(cmd), res.rc, res.stdout, res.stderr, res.duration),
                                   timeout)


class EnvRunner:
    """The runner below with more environment (a container-less engine's launch env)."""

    def __init__(self, below: Runner, env: dict[str, str] | None = None):
        self.below, self.env = below, dict(env or {})
        self.node, self.kind = below.node, below.kind

    def argv(self, cmd: Sequence[str], timeout: float | None = None) -> list[str]:
        return self.below.argv(with_env(cmd, self.env), timeout)

    def run(self, cmd: Sequence[str], timeout: float, stdin: str | None = None) -> Result:
        res = self.below.run(with_env(cmd, self.env), timeout, stdin)
        return Result(res.node, shown(cmd), res.rc, res.stdout, res.stderr, res.duration)
