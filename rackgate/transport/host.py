"""A node as tests see it: run commands, read files, start and stop background processes.

Probes get a Host and never know whether the node is real or simulated.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .deadline import wait_for
from .procs import REGISTRY
from .result import Result, SpawnUnknown, TransportError
from .runners import ContainerRunner, EnvRunner, Runner, as_argv, shown, with_env

_MISSING = "__rackgate_missing__"
_FAILED = "__rackgate_read_failed__"
_END = "__rackgate_end__"


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
        return self._exists(str(self.pid), f"PID {self.pid}")

    def _exists(self, target: str, what: str) -> bool:
        """`kill -0 -- TARGET` (a PID, or -PGID: any process of the group), read only where kill's
        answer says: exit 0 (there) or "No such process" (not)."""
        res = self.host.run(["kill", "-0", "--", target], timeout=15)
        if res.rc == 0 and not res.stdout.strip():
            return True
        if res.rc == 1 and "No such process" in res.stderr:
            return False
        # anything else says nothing about the process: never read as "it ended"
        said = (res.stderr.strip() or res.stdout.strip() or "no output").splitlines()[-1][:160]
        raise TransportError(self.host.name, f"could not tell whether {what} is running: "
                                             f"`kill -0 -- {target}` exited {res.rc}: {said}")

    def _gone(self) -> bool:
        """For stop(): gone when no process of its group is left (it leads the session `setsid` gave
        it, so the group holds it too), nor its PID where it leads no group. Its own PID alone is not
        enough: a launch runs under a shell wrapper (rackgate.atom.server WRAPPER), which ends at TERM
        at once while the server it started shuts down for seconds, or ignores TERM and needs the
        KILL. A process we cannot tell about is not gone (KILL follows at the grace)."""
        if self.stopped:
            return True
        try:
            return not self._exists(f"-{self.pid}", f"process group {self.pid}") and not self.alive()
        except TransportError:
            return False

    def _signal(self, sig: str) -> None:
        """Send sig to the group (else the PID). A kill that failed while the process still runs
        raises: a process the suite could not signal is never one that 'would not die'."""
        res = self.host.shell('kill -"$1" -"$2" 2>/dev/null || kill -"$1" "$2" 2>/dev/null', sig, str(self.pid),
                              timeout=15)
        if res.rc != 0 and not self._gone():
            raise TransportError(self.host.name, f"could not send {sig} to PID {self.pid} (started by rackgate): "
                                                 f"kill came back {res.came_back()}")

    def stop(self, grace_s: float = 10.0) -> None:
        """TERM the process group we created, wait a bounded time, then KILL it."""
        if self.stopped:
            return
        try:
            self._signal("TERM")
            if wait_for(self._gone, grace_s) is None:
                self._signal("KILL")
                wait_for(self._gone, grace_s)  # KILL is delivered, not awaited, by kill(1)
        finally:
            self.stopped = True
            REGISTRY.drop_spawned(self)


# Starts "$@" in a session of its own, output to the log file "$1"; prints its PID.
_SPAWN = 'log="$1"; shift; mkdir -p "$(dirname "$log")" && { setsid "$@" > "$log" 2>&1 < /dev/null & echo $!; }'


class Host:
    """A node (or a container on it). Paths given to its file methods are node paths; the host
    applies the node's sysroot, and paths it returns are node paths again."""

    def __init__(self, name: str, runner: Runner, sysroot: str = "", default_timeout: float = 60.0):
        self.name, self.runner, self.sysroot = name, runner, sysroot.rstrip("/")
        self.default_timeout = default_timeout
        self._is_root: bool | None = None

    def __repr__(self) -> str:
        return f"Host({self.name}, {self.runner.kind})"

    # --- commands -------------------------------------------------------------------------
    def run(self, cmd: Sequence[str], timeout: float | None = None, stdin: str | None = None) -> Result:
        """Run argv on the node, word for word. Never raises on a non-zero rc; raises
        TransportError when the node cannot be reached and CommandTimeout when the command
        outlives its bound. A str is refused (TypeError): a shell script goes through shell()."""
        return self.runner.run(as_argv(cmd), timeout or self.default_timeout, stdin)

    def shell(self, script: str, *args: str, timeout: float | None = None, stdin: str | None = None) -> Result:
        """Run a fixed shell script on the node with values as its positional arguments ("$1",
        "$2", ...): `sh -c SCRIPT sh ARGS...`. Values are never pasted into the script text, so a
        path with a space, a quote or `$(...)` arrives as one word. Node paths among args are
        the caller's to resolve (self.path)."""
        if not isinstance(script, str):
            raise TypeError("Host.shell takes the script text; argv goes through Host.run")
        return self.run(["sh", "-c", script, "sh", *args], timeout, stdin)

    def argv(self, cmd: Sequence[str], timeout: float | None = None) -> list[str]:
        """The local argv that runs cmd (argv on the node) there (for a process we read as it runs)."""
        return self.runner.argv(as_argv(cmd), timeout)

    def path(self, p: str) -> str:
        """An absolute node path as the node's commands see it (the sysroot applied)."""
        return self.sysroot + p if p.startswith("/") and self.sysroot else p

    def node_path(self, p: str) -> str:
        """A path a command printed, as a node path again (the sysroot removed)."""
        if self.sysroot and (p == self.sysroot or p.startswith(self.sysroot + "/")):
            return p[len(self.sysroot):] or "/"
        return p

    def node_text(self, text: str) -> str:
        """Command output with every sysrooted path shown as a node path (for evidence)."""
        return text.replace(self.sysroot + "/", "/") if self.sysroot else text

    @property
    def is_root(self) -> bool:
        if self._is_root is None:
            uid = self.run(["id", "-u"], timeout=15).require(tool="id").stdout.strip()
            if not uid.isdecimal():
                raise TransportError(self.name, f"`id -u` printed no user id: {uid[:80]!r}")
            self._is_root = uid == "0"
        return self._is_root

    def _sudo(self, privileged: bool) -> str:
        return "" if not privileged or self.is_root else "sudo -n "

    def _check_sudo(self, res: Result, privileged: bool) -> Result:
        if privileged and not self.is_root and "sudo:" in res.stderr and "password" in res.stderr:
            raise TransportError(self.name, f"sudo -n was refused (needed to read as root): {res.stderr.strip()}")
        return res

    # --- files ----------------------------------------------------------------------------
    def read(self, p: str, privileged: bool = False) -> str | None:
        """A file's text, or None when it does not exist; TransportError when it cannot be read."""
        text, stderr = self._cat([p], privileged)
        if text[0] is not None and text[0].endswith(_FAILED + "\n"):
            raise TransportError(self.name, f"cannot read {p}: {stderr.strip()[:200]}")
        return text[0]

    def read_many(self, paths: list[str], privileged: bool = False) -> dict[str, str | None]:
        """Several small files in one round trip (sysfs attributes): {path: text, or None when
        absent}. A file that exists but cannot be read gives what cat printed (sysfs: nothing)."""
        if not paths:
            return {}
        text, _ = self._cat(paths, privileged)
        return {p: t.removesuffix(_FAILED + "\n") if t is not None else None for p, t in zip(paths, text)}

    def _cat(self, paths: list[str], privileged: bool) -> tuple[list[str | None], str]:
        sep = "__rackgate_sep__"
        sudo = "sudo -n" if self._sudo(privileged) else ""
        # $1 the separator, $2 the read-failed marker, $3 the missing marker, $4 "sudo -n" or "".
        script = ('s="$1" failed="$2" missing="$3" sudo="$4"; shift 4; for f; do echo "$s"; if [ -e "$f" ]; then '
                  '$sudo cat -- "$f" || echo "$failed"; else echo "$missing"; fi; done')
        res = self._check_sudo(self.shell(script, sep, _FAILED, _MISSING, sudo, *map(self.path, paths), timeout=30),
                               privileged).require(tool="sh", nonempty=False)
        chunks = res.stdout.split(sep + "\n")[1:]
        if len(chunks) != len(paths):
            raise TransportError(self.name, f"truncated output reading {len(paths)} files: {res.stderr.strip()[:200]}")
        return [None if c.strip() == _MISSING else c for c in chunks], res.stderr

    def exists(self, p: str) -> bool:
        """Whether a node path exists; CouldNotObserve when the node did not say (not "absent")."""
        res = self.shell('if [ -e "$1" ]; then echo yes; else echo no; fi', self.path(p), timeout=15)
        said = res.require(tool="sh", nonempty=False).stdout.strip()
        if said not in ("yes", "no"):
            raise TransportError(self.name, f"`test -e {p}` did not answer yes or no: {res.came_back()}")
        return said == "yes"

    def glob(self, pattern: str) -> list[str]:
        """Node paths matching a shell glob on the node. The pattern is a glob, never a command:
        it is handed to the node's shell as a positional argument and only pathname-expanded."""
        res = self.shell('IFS=; for f in $1; do [ -e "$f" ] && printf "%s\\n" "$f"; done; echo "$2"',
                         self.path(pattern), _END, timeout=30).require(tool="sh", nonempty=False)
        lines = res.lines()
        if not lines or lines[-1] != _END:  # an empty listing still ends with the marker
            raise TransportError(self.name, f"listing {pattern} did not complete: {res.came_back()}")
        return [self.node_path(line) for line in lines[:-1] if line]

    def stat(self, paths: list[str], fmt: str = "%s") -> dict[str, str | None]:
        """`stat -c FMT` of each node path: {path: the formatted line, or None when it is absent}."""
        if not paths:
            return {}
        res = self.shell('f="$1" missing="$2"; shift 2; for p; do if [ -e "$p" ]; then stat -c "$f" -- "$p"; '
                         'else echo "$missing"; fi; done', fmt, _MISSING, *[self.path(p) for p in paths], timeout=30)
        res.require(tool="stat", nonempty=False)
        got = res.lines()
        if len(got) != len(paths):
            raise TransportError(self.name, f"stat of {len(paths)} paths gave {len(got)} lines: "
                                            f"{res.stderr.strip()[:200]}")
        return {p: (None if g == _MISSING else g) for p, g in zip(paths, got)}

    def mtime(self, p: str) -> int | None:
        """A node path's modification time (epoch seconds), None when it does not exist."""
        got = self.stat([p], "%Y")[p]
        return int(got) if got and got.isdigit() else None

    def find(self, root: str, name: str, newer_than: int | None = None) -> list[str]:
        """Node paths under root whose name matches `name` (modified after epoch newer_than)."""
        argv = ["find", self.path(root), "-name", name]
        if newer_than is not None:
            argv += ["-newermt", f"@{newer_than}"]
        return [self.node_path(line) for line in self.run(argv, timeout=30).require(tool="find", nonempty=False).lines()
                if line]

    def now(self) -> int | None:
        """The node's clock, epoch seconds."""
        got = self.run(["date", "+%s"], timeout=30).stdout.strip()
        return int(got) if got.isdigit() else None

    # --- background processes -------------------------------------------------------------
    def spawn(self, cmd: Sequence[str], log_path: str, env: dict[str, str] | None = None) -> Spawned:
        """Start a long-lived process in its own session, output to log_path on the node.
        env values expand on the node (runners.with_env). It is recorded and stopped by PID
        at teardown."""
        argv = as_argv(cmd)
        try:
            res = self.shell(_SPAWN, self.path(log_path), *with_env(argv, env), timeout=30)
        except TransportError as e:
            raise SpawnUnknown(self.name, argv, f"could not start {shown(argv)[:80]!r}: {e}") from None
        said = res.stdout.split("\n")
        # the PID line whole, from a shell that exited 0: a cut reply ("231" of "23176") is no PID
        if res.rc != 0 or len(said) < 2 or not said[-2].strip().isdigit():
            raise SpawnUnknown(self.name, argv, f"could not start {shown(argv)[:80]!r}: the start's reply "
                                                f"was {res.came_back()}")
        pid = int(said[-2].strip())
        proc = Spawned(self, pid, shown(argv), log_path)
        REGISTRY.add_spawned(proc)
        return proc

    def container(self, name: str, sysroot: str = "", env: dict[str, str] | None = None) -> "Host":
        """The engine's side of the node: inside container `name` (docker exec), or -- when the
        rack file says container = "" -- the node itself, with the same env rule."""
        if not name:
            return Host(self.name, EnvRunner(self.runner, env), self.sysroot, self.default_timeout)
        return Host(f"{self.name}/{name}", ContainerRunner(self.runner, name, env), sysroot, self.default_timeout)
