"""ubench07's run bound (fabric.p2p_run_s / bw_run_s) against a virtual clock: it counts from when
the importer/connector shows it runs, so a start-up slowed by a busy machine is not the fabric
sitting; a tool that never prints anything is still ended at the bound counted from its spawn."""
import threading
from types import SimpleNamespace

import pytest

from rackgate.fabric import ubench07

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


class Tool:
    """A spawned process on the virtual clock: prints its first line at `prints_at`, exits at `exits_at`."""

    def __init__(self, clock: Clock, prints_at: float | None, exits_at: float | None):
        self.clock, self.prints_at, self.exits_at, self.stopped_at = clock, prints_at, exits_at, None
        self.pid = 4242

    def alive(self) -> bool:
        return self.stopped_at is None and (self.exits_at is None or self.clock.now < self.exits_at)

    def stop(self, grace_s: float = 0) -> None:
        self.stopped_at = self.clock.now

    def output(self) -> str:
        return "[import] connecting\n" if self.prints_at is not None and self.clock.now >= self.prints_at else ""


def _wait(monkeypatch, server_exits_at, client_prints_at, client_exits_at, limit=4.0):
    clock = Clock()
    monkeypatch.setattr(ubench07, "time", clock)
    cfg = SimpleNamespace(p2p_run_s=limit, bw_run_s=limit, ubench_ready_s=30.0)
    runner = ubench07.Runner.__new__(ubench07.Runner)
    runner.tool, runner.cfg, runner.result, runner._lock = "p2p", cfg, ubench07.Ubench07("p2p"), threading.Lock()
    server, client = Tool(clock, 0.0, server_exits_at), Tool(clock, client_prints_at, client_exits_at)
    run = ubench07.PairRun("p2p", ("a", "b"), ubench07.Side("a", "exporter", "x"), ubench07.Side("b", "importer", "y"))
    runner._wait(server, client, run, client.output)
    return run, client, clock


def test_a_slow_start_up_is_not_the_fabric_sitting(monkeypatch):
    # the importer needed 3.5 s to start (a busy machine), then finished 2 s later: past the
    # 4 s bound counted from its spawn, inside the bound counted from its first line
    run, _, clock = _wait(monkeypatch, server_exits_at=5.6, client_prints_at=3.5, client_exits_at=5.5)
    assert run.client.exited and not run.client.ended_by_suite and clock.now >= 5.5


def test_a_sitting_tool_is_still_ended_at_its_bound(monkeypatch):
    # prints its first line, then sits (the npa-timeout fabric): ended limit seconds after that line
    run, client, _ = _wait(monkeypatch, server_exits_at=None, client_prints_at=0.5, client_exits_at=None)
    assert run.client.ended_by_suite and 4.5 <= client.stopped_at <= 4.5 + 0.5
    # prints nothing at all: ended at the bound counted from its spawn, as before
    run, client, _ = _wait(monkeypatch, server_exits_at=None, client_prints_at=None, client_exits_at=None)
    assert run.client.ended_by_suite and 4.0 <= client.stopped_at <= 4.0 + 0.5
