"""Every process the suite starts is recorded here and ended by PID / process group.

Short commands are local process groups (ended on timeout). Long-lived processes on nodes
(servers, ubench listeners) are recorded as (host, pid) and stopped through their host at
teardown, at exit, and on SIGINT/SIGTERM. Nothing is ever ended by name pattern, and nothing
the suite did not start is ever touched.
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
from typing import Protocol


class Stoppable(Protocol):
    def stop(self) -> None: ...


class Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local: dict[int, subprocess.Popen] = {}
        self._spawned: list[Stoppable] = []

    # local, short-lived command process groups
    def add_local(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._local[proc.pid] = proc

    def drop_local(self, proc: subprocess.Popen) -> None:
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
        with self._lock:
            local = list(self._local.values())
            self._local.clear()
        for p in local:
            kill_group(p)


def kill_group(proc: subprocess.Popen, grace: float = 2.0) -> None:
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


def _on_signal(signum, frame):  # pragma: no cover - exercised by the interrupt selftest
    REGISTRY.stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_signal_handlers() -> None:
    """SIGTERM ends what we started, then dies as it would have. (SIGINT is pytest's
    KeyboardInterrupt, whose session teardown calls stop_all.)"""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_signal)
