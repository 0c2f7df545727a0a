"""A run stopped by a signal (issue 52): SIGTERM (a scheduler's time limit) and SIGHUP end it the way
Ctrl-C does -- what rackgate started stopped, junit.xml, the Allure results and verdict.json on disk
with the items judged so far, the run marked interrupted with the signal named, never PASS -- and
SIGKILL (or a second signal) loses at most the item in flight: the reports are written as each item
finishes. A real suite process and a real signal; a plugin holds the Nth item until the signal comes
(an event, not a timer). The bound on the time to exit is the suite's own (interrupt.BOUND_S, its
watchdog) plus a generous margin for a loaded machine: no speed is asserted."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from rackgate.report import junit
from rackgate.transport import interrupt

from .harness import REPO, read_verdict, suite_command, suite_env
from .test_cleanup import processes_mentioning, wait_for

pytestmark = pytest.mark.suite

HOLD = """
import os, pathlib, time

MARK, N, started = pathlib.Path(os.environ["RG_HOLD_MARK"]), int(os.environ["RG_HOLD_N"]), []


def pytest_runtest_call(item):
    # the Nth item holds the run until the signal comes (bounded)
    started.append(item.nodeid)
    if len(started) == N and not MARK.exists():
        MARK.write_text(item.nodeid)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            time.sleep(0.1)
"""
MARGIN_S = 60   # beyond the suite's own bound: a loaded machine's slowness, never a threshold on speed


def _held_run(tmp_path: Path, n: int, *args: str) -> tuple[subprocess.Popen[str], str]:
    """A suite run (its reports in tmp_path) held at its nth item; (the process, the held item's id)."""
    (tmp_path / "rg_hold.py").write_text(HOLD)
    mark = tmp_path / "holding"
    env = suite_env({"RG_HOLD_MARK": str(mark), "RG_HOLD_N": str(n), "RACKGATE_SIM_WORKDIR": str(tmp_path / "sim"),
                     "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))})
    cmd = suite_command(tmp_path, ("-p", "rg_hold", *args, f"--baseline={REPO / 'rackgate/sim/racks/sim-baseline.json'}"),
                        allure=True)
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    if not wait_for(mark.exists, 300, proc):
        out = proc.communicate(timeout=60)[0] if proc.poll() is not None else "still running, never held"
        _end(proc)
        raise AssertionError(f"the run never reached item {n}: {out[-3000:]}")
    return proc, mark.read_text()


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _finish(proc: subprocess.Popen[str], sig: int) -> str:
    try:
        proc.send_signal(sig)
        return proc.communicate(timeout=interrupt.BOUND_S + MARGIN_S)[0]
    finally:
        _end(proc)


def _item_of(title: str) -> str:
    """The item an Allure title names: `PLAT-RAS [node1] no uncorrectable ...` -> PLAT-RAS::node1."""
    row, _, rest = title.partition(" [")
    return f"{row}::{rest.partition(']')[0]}"


def _allure_results(tmp_path: Path) -> dict[str, str]:
    """Allure's result files: test name -> status."""
    out = {}
    for f in (tmp_path / "allure").glob("*-result.json"):
        r = json.loads(f.read_text())
        out[r.get("name", "")] = r.get("status", "")
    return out


def _judged(verdict: dict) -> set[str]:
    return {i["test"] for i in verdict["items"]}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_the_run_with_its_reports_on_disk(sig, tmp_path):
    proc, held = _held_run(tmp_path, 5, "-m", "platform")
    out = _finish(proc, sig)
    name = signal.Signals(sig).name
    assert proc.returncode == -sig, f"exit {proc.returncode}, not ended as {name} would end it\n{out[-3000:]}"
    verdict, problem = read_verdict(tmp_path / "verdict.json")
    assert verdict is not None, problem
    assert verdict["run"] == {"state": "interrupted", "signal": name}, verdict["run"]
    assert verdict["verdict"] != "PASS" and verdict["exit_code"] != 0
    assert any(u["test"] == "(the run)" and name in u["why"] for u in verdict["rack_unknown"]), verdict["rack_unknown"]
    judged = _judged(verdict)
    assert len(judged) == 4 and held not in judged, (held, judged)   # the four before it; the held one was in flight
    cases = junit.read(tmp_path / "junit.xml")
    assert set(cases) == judged, (set(cases), judged)
    assert f"interrupted by {name}" in (tmp_path / "junit.xml").read_text()
    allure = _allure_results(tmp_path)   # each item's result file, written as it finished
    by_item = {_item_of(n): s for n, s in allure.items()}   # an Allure title: "ROW [place] the row's title"
    assert {n for n, s in by_item.items() if s == "passed"} == judged, allure
    assert by_item.get(held) in (None, "unknown"), allure   # the one in flight: never passed


def test_a_launched_gate_stopped_by_sigterm_stops_its_server(tmp_path):
    """The issue's scheduler case: SIGTERM while a launched server serves a gate's check."""
    proc, held = _held_run(tmp_path, 4, "-m", "gate")
    simdir = str(tmp_path / "sim")
    assert processes_mentioning(simdir), "the sim server should be up before the signal"
    out = _finish(proc, signal.SIGTERM)
    assert proc.returncode == -signal.SIGTERM, out[-3000:]
    assert wait_for(lambda: processes_mentioning(simdir) == [], 30), processes_mentioning(simdir)
    verdict, problem = read_verdict(tmp_path / "verdict.json")
    assert verdict is not None, problem
    assert verdict["run"]["state"] == "interrupted" and verdict["verdict"] != "PASS"
    assert len(_judged(verdict)) == 3 and held not in _judged(verdict), (held, verdict["items"])
    assert set(junit.read(tmp_path / "junit.xml")) == _judged(verdict)


def test_sigkill_loses_at_most_the_item_in_flight(tmp_path):
    """No session end at all: what each finished item wrote is what is left."""
    proc, held = _held_run(tmp_path, 6, "-m", "platform")
    out = _finish(proc, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL, out[-2000:]
    verdict, problem = read_verdict(tmp_path / "verdict.json")
    assert verdict is not None, problem
    assert verdict["run"] == {"state": "running", "signal": ""}
    assert verdict["verdict"] != "PASS"
    judged = _judged(verdict)
    assert len(judged) == 5 and held not in judged, (held, judged)
    assert set(junit.read(tmp_path / "junit.xml")) == judged
    assert not list(tmp_path.glob(".*.tmp")), "a temporary report file was left beside the reports"
