"""Every process the suite starts is recorded here and ended by PID / process group.

Short commands are local process groups (ended on timeout). Long-lived processes on nodes
(servers, ubench listeners) are recorded as (host, pid) and stopped through their host at
teardown, at exit, and on SIGINT/SIGTERM/SIGHUP (rackgate/transport/interrupt.py). Nothing is
ever ended by name pattern, and nothing the suite did not start is ever touched.
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO, Callable, Protocol

from .deadline import Deadline


class Stoppable(Protocol):
    def stop(self) -> None: ...


class Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local: dict[int, subprocess.Popen[str]] = {}
        self._spawned: list[Stoppable] = []

    # local, short-lived command process groups
    def add_local(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            self._local[proc.pid] = proc

    def drop_local(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            self._local.pop(proc.pid, None)

    # long-lived processes on nodes
    def add_spawned(self, proc: Stoppable) -> None:
        with self._lock:
            self._spawned.append(proc)

    def drop_spawned(self, proc: Stoppable) -> None:
        with self._lock:
            if proc in self._spawned:
                self._spawned.remove(proc)

    def spawned(self) -> list[Stoppable]:
        with self._lock:
            return list(self._spawned)

    def stop_all(self) -> None:
        for proc in reversed(self.spawned()):
            try:
                proc.stop()
            except Exception:  # noqa: BLE001 - teardown must reach every process
                pass
        self.stop_local()

    def stop_local(self) -> None:
        """End the local command process groups running now (a signal stopped the run: the
        commands in flight end, so the teardown is not held by them)."""
        with self._lock:
            local = list(self._local.values())
            self._local.clear()
        for p in local:
            kill_group(p)


def kill_group(proc: subprocess.Popen[str] | subprocess.Popen[bytes], grace: float = 2.0) -> None:
    """End a local process group we started: TERM, a bounded wait, then KILL."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


REGISTRY = Registry()
atexit.register(REGISTRY.stop_all)


@dataclass(frozen=True)
class Finished:
    pid: int
    rc: int
    stdout: str
    stderr: str
    duration: float


class Overran(Exception):
    """The process outlived its bound; its group was ended. The partial output is kept."""

    def __init__(self, pid: int, timeout: float, stdout: str = "", stderr: str = ""):
        super().__init__(f"pid {pid} did not finish within {timeout:g}s")
        self.pid, self.timeout, self.stdout, self.stderr = pid, timeout, stdout, stderr


Sink = int | IO[str] | None


def run_bounded(argv: list[str], timeout: float, *, stdin: str | None = None,
                stdout: Sink = subprocess.PIPE, stderr: Sink = subprocess.PIPE,
                env: dict[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
                tick: Callable[[int, float], None] | None = None, tick_s: float = 10.0) -> Finished:
    """The one start-wait-kill: start argv in a process group of its own (recorded in REGISTRY),
    wait at most `timeout`, calling tick(pid, elapsed) every tick_s while it runs; at the bound
    end the whole group (TERM, then KILL) and raise Overran. OSError (cannot start) propagates."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=stdout, stderr=stderr, env=env, cwd=cwd, start_new_session=True,
                            text=True, errors="replace")
    REGISTRY.add_local(proc)
    deadline = Deadline(timeout)
    try:
        while True:
            wait = min(tick_s, deadline.left()) if tick else deadline.left()
            try:
                out, err = proc.communicate(stdin, timeout=wait)
                break
            except subprocess.TimeoutExpired:
                stdin = None  # already handed over; communicate() resumes
                if deadline.passed():
                    kill_group(proc, grace=1.0)
                    out, err = proc.communicate()
                    raise Overran(proc.pid, timeout, out or "", err or "") from None
                if tick:
                    tick(proc.pid, time.monotonic() - t0)
    finally:
        if proc.poll() is None:
            kill_group(proc, grace=1.0)
        REGISTRY.drop_local(proc)
    return Finished(proc.pid, proc.returncode, out or "", err or "", time.monotonic() - t0)
