"""A node as tests see it: run commands, read files, start and stop background processes.

Probes get a Host and never know whether the node is real or simulated.
"""
from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field

from .procs import REGISTRY
from .result import Result, TransportError

_MISSING = "__rackgate_missing__"


@dataclass(eq=False)
class Spawned:
    """A background process we started on a node, ended by PID (its process group) only."""
    host: "Host"
    pid: int
    command: str
    log_path: str
    stopped: bool = field(default=False)

    def alive(self) -> bool:
        if self.stopped:
            return False
        return self.host.run(f"kill -0 {self.pid} 2>/dev/null", timeout=15).ok

    def stop(self, grace_s: float = 10.0) -> None:
        """TERM the process group we created, wait a bounded time, then KILL it."""
        if self.stopped:
            return
        pid = self.pid
        try:
            self.host.run(f"kill -TERM -{pid} 2>/dev/null || kill -TERM {pid} 2>/dev/null", timeout=15)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and self.alive():
                time.sleep(0.2)
            if self.alive():
                self.host.run(f"kill -KILL -{pid} 2>/dev/null || kill -KILL {pid} 2>/dev/null", timeout=15)
        finally:
            self.stopped = True
            REGISTRY.drop_spawned(self)


def _dq(value: str) -> str:
    return '"' + "".join("\\" + c if c in '\\"`' else c for c in value) + '"'


class Host:
    def __init__(self, name: str, runner, sysroot: str = "", default_timeout: float = 60.0):
        self.name, self.runner, self.sysroot = name, runner, sysroot.rstrip("/")
        self.default_timeout = default_timeout
        self._is_root: bool | None = None

    def __repr__(self) -> str:
        return f"Host({self.name}, {self.runner.kind})"

    # --- commands -------------------------------------------------------------------------
    def run(self, cmd: str, timeout: float | None = None, stdin: str | None = None) -> Result:
        """Run a shell command. Never raises on a non-zero rc; raises TransportError when the
        node cannot be reached and CommandTimeout when the command outlives its bound."""
        return self.runner.run(cmd, timeout or self.default_timeout, stdin)

    def path(self, p: str) -> str:
        """An absolute path on the node as the node's commands see it."""
        return self.sysroot + p if p.startswith("/") and self.sysroot else p

    def qpath(self, p: str) -> str:
        return shlex.quote(self.path(p))

    @property
    def is_root(self) -> bool:
        if self._is_root is None:
            self._is_root = self.run("id -u", timeout=15).stdout.strip() == "0"
        return self._is_root

    def _sudo(self, privileged: bool) -> str:
        return "" if not privileged or self.is_root else "sudo -n "

    def _check_sudo(self, res: Result, privileged: bool) -> Result:
        if privileged and not self.is_root and "sudo:" in res.stderr and "password" in res.stderr:
            raise TransportError(self.name, f"sudo -n was refused (needed to read as root): {res.stderr.strip()}")
        return res

    # --- files ----------------------------------------------------------------------------
    def read(self, p: str, privileged: bool = False) -> str | None:
        """A file's text, or None when it does not exist."""
        q = self.qpath(p)
        res = self.run(f"if [ -e {q} ]; then {self._sudo(privileged)}cat {q}; else echo {_MISSING}; fi", timeout=30)
        self._check_sudo(res, privileged)
        if res.stdout.strip() == _MISSING:
            return None
        if not res.ok:
            raise TransportError(self.name, f"cannot read {p}: {res.stderr.strip()}")
        return res.stdout

    def read_many(self, paths: list[str], privileged: bool = False) -> dict[str, str | None]:
        """Several small files in one round trip (sysfs attributes)."""
        if not paths:
            return {}
        sep = "__rackgate_sep__"
        sudo = self._sudo(privileged)
        script = "; ".join(
            f"echo {sep}; if [ -e {self.qpath(p)} ]; then {sudo}cat {self.qpath(p)}; else echo {_MISSING}; fi"
            for p in paths)
        res = self._check_sudo(self.run(script, timeout=30), privileged)
        chunks = res.stdout.split(sep + "\n")[1:]
        if len(chunks) != len(paths):
            raise TransportError(self.name, f"truncated output reading {len(paths)} files: {res.stderr.strip()[:200]}")
        return {p: (None if c.strip() == _MISSING else c) for p, c in zip(paths, chunks)}

    def exists(self, p: str) -> bool:
        return self.run(f"[ -e {self.qpath(p)} ]", timeout=15).ok

    def glob(self, pattern: str) -> list[str]:
        """Paths matching a shell glob on the node, as node paths (sysroot stripped)."""
        res = self.run(f"for f in {self.path(pattern)}; do [ -e \"$f\" ] && echo \"$f\"; done; true", timeout=30)
        n = len(self.sysroot)
        return [line[n:] if self.sysroot else line for line in res.lines() if line]

    # --- background processes -------------------------------------------------------------
    def spawn(self, cmd: str, log_path: str, env: dict[str, str] | None = None) -> Spawned:
        """Start a long-lived process in its own session, output to log_path on the node.
        It is recorded and stopped by PID at teardown."""
        # Double quotes, as the runbook writes them: `LD_LIBRARY_PATH=/app/rjprefix/lib:$LD_LIBRARY_PATH`
        # must extend the node's own value, so $VAR expands; nothing else does (\ " ` are escaped).
        exports = "".join(f"export {k}={_dq(v)}; " for k, v in (env or {}).items())
        log = self.qpath(log_path)
        script = (f"mkdir -p $(dirname {log}) && {exports}"
                  f"setsid sh -c {shlex.quote(cmd)} > {log} 2>&1 < /dev/null & echo $!")
        res = self.run(script, timeout=30)
        try:
            pid = int(res.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise TransportError(self.name, f"could not start {cmd[:80]!r}: {res.stderr.strip()[:200]}") from None
        proc = Spawned(self, pid, cmd, log_path)
        REGISTRY.add_spawned(proc)
        return proc

    def container(self, name: str, sysroot: str = "", env: dict[str, str] | None = None) -> "Host":
        from .runners import ContainerRunner
        return Host(f"{self.name}/{name}", ContainerRunner(self.runner, name, env), sysroot, self.default_timeout)
