"""`rackgate watch` on a sim rack, driven by cycle counts (no wall-clock threshold): a fault injected
into the watched rack's file turns its metric to 0 in the first cycle that starts after it; a watch
killed mid-way is restarted, waits for the run its predecessor left (the lock it inherited), and
continues from verdict.json (the next cycle number; only the failed item re-run; the history only
appended to); a second watch on the same state is refused; SIGTERM ends the watch and its run."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rackgate import registry
from rackgate.registry import checks

from ..harness import REPO, user_env
from .promstack import need_binaries, stack, wait_for

pytestmark = pytest.mark.suite

SIM = REPO / "rackgate/sim/racks"
FAULTED = registry.item_id(checks()["FAB-STATE"], "node2", 1)
BAD_SERIES = 'rackgate_check_status{rack="sim-4x4",node="node2",gpu="1",rank="",row="FAB-STATE"}'


def _watch(tmp: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rackgate.cli", "watch", "--state", str(tmp / "state"),
                             "--metrics-file", str(tmp / "tf" / "rackgate.prom"), *extra,
                             "--rack", str(tmp / "rack.toml"), "-m", "fabric", "-k", "fab_state"],
                            cwd=tmp, env=user_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _history(tmp: Path) -> list[dict]:
    p = tmp / "state" / "history.jsonl"
    return [json.loads(ln) for ln in p.read_text().splitlines()] if p.exists() else []


def _cycles(tmp: Path) -> list[dict]:
    return [r for r in _history(tmp) if "ran" in r]


def _until(what, proc: subprocess.Popen | None = None, timeout_s: float = 420):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the watch exited {proc.returncode}: {proc.stdout.read()[-3000:] if proc.stdout else ''}")
        time.sleep(0.3)
    pytest.fail(f"not within the {timeout_s:g}s bound")


def _metric(tmp: Path, series: str) -> str | None:
    p = tmp / "tf" / "rackgate.prom"
    for ln in (p.read_text().splitlines() if p.exists() else []):
        if ln.startswith(series + " "):
            return ln.rpartition(" ")[2]
    return None


def _end(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.kill()
        p.wait(timeout=30)


def test_a_fault_in_a_watched_rack_turns_its_metric_to_0_within_one_cycle_and_the_watch_survives(tmp_path):
    """...and the real Prometheus, scraping the real node_exporter's textfile collector over the
    watch's metrics file, finds the faulted GPU with `rackgate_check_status == 0`."""
    need_binaries()
    shutil.copy(SIM / "sim-baseline.json", tmp_path / "sim-baseline.json")
    healthy = (SIM / "sim.toml").read_text()
    assert "faults = []" in healthy
    (tmp_path / "rack.toml").write_text(healthy)
    first = _watch(tmp_path, "--every", "0.2", "--max-age", "0", "--lock-wait", "0")
    second = third = None
    try:
        _until(lambda: [c for c in _cycles(tmp_path) if c.get("verdict") == "PASS"], first)
        assert _metric(tmp_path, BAD_SERIES) == "1"
        injected = time.time()
        faulted = tmp_path / "rack.toml.new"   # replaced whole: a cycle starting now never reads half a file
        faulted.write_text(healthy.replace("faults = []", 'faults = ["stuck-link@node2:1"]'))
        os.replace(faulted, tmp_path / "rack.toml")
        after = _until(lambda: [c for c in _cycles(tmp_path) if c["started_s"] > injected and "verdict" in c], first)[0]
        judged = {r["test"]: r["outcome"] for r in _history(tmp_path) if r.get("cycle") == after["cycle"] and "test" in r}
        assert after["verdict"] == "FAIL" and judged[FAULTED] == "FAIL" and list(judged.values()).count("FAIL") == 1
        assert _metric(tmp_path, BAD_SERIES) == "0"
        with stack(tmp_path / "tf", tmp_path / "prom") as prom:
            bad = wait_for(prom, "rackgate_check_status == 0", bool)
            assert [(m["metric"]["node"], m["metric"]["gpu"], m["metric"]["row"]) for m in bad] == [("node2", "1", "FAB-STATE")]

        first.kill()   # the watch dies; the run it started (if one runs) goes on holding the lock
        first.wait(timeout=30)
        before = (tmp_path / "state" / "history.jsonl").read_text()
        last = _cycles(tmp_path)[-1]["cycle"]
        second = _watch(tmp_path, "--every", "600", "--lock-wait", "400")
        resumed = _until(lambda: [c for c in _cycles(tmp_path) if c["cycle"] > last], second)[0]
        assert resumed["cycle"] == last + 1 and resumed["ran"] == 1 and resumed["verdict"] == "FAIL"
        assert [r["test"] for r in _history(tmp_path) if r.get("cycle") == resumed["cycle"] and "test" in r] == [FAULTED]
        assert (tmp_path / "state" / "history.jsonl").read_text().startswith(before)
        assert _metric(tmp_path, BAD_SERIES) == "0"

        third = _watch(tmp_path, "--every", "600", "--lock-wait", "0")
        out, _ = third.communicate(timeout=120)
        assert third.returncode == 2 and f"is held by PID {second.pid}" in out

        second.send_signal(signal.SIGTERM)
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 0 and "stopped (signal)" in out, out[-2000:]
        fd = os.open(tmp_path / "state" / "watch.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # nothing holds it: the watch and its run are gone
        finally:
            os.close(fd)
    finally:
        for p in (first, second, third):
            if p is not None:
                _end(p)


def test_an_attached_server_is_attached_to_every_cycle_and_never_relaunched(tmp_path):
    """Cycle 1 attaches and passes; the server dies; cycle 2 attaches again and cannot observe
    (UNKNOWN, metric -1): it launches nothing in its place."""
    from ..simserver import sim_server
    series = 'rackgate_check_status{rack="attached",node="",gpu="",rank="",row="SRV-MODELS"}'

    def cycle(url: str) -> tuple[dict, str]:
        p = subprocess.run([sys.executable, "-m", "rackgate.cli", "watch", "--state", str(tmp_path / "state"), "--every", "0",
                            "--cycles", "1", "--max-age", "0", "--metrics-file", str(tmp_path / "tf" / "rackgate.prom"),
                            "--atom-url", url, "--served-model", "moonshotai/Kimi-K3", "-m", "gate", "-k", "srv_models"],
                           cwd=tmp_path, env=user_env(), capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        return _cycles(tmp_path)[-1], (tmp_path / "state" / "run" / "output.txt").read_text()

    with sim_server() as (proc, url):
        first, out = cycle(url)
        assert first["verdict"] == "PASS" and proc.poll() is None and f"attached to {url}" in out
    rack = json.loads((tmp_path / "state" / "verdict.json").read_text())["rack"]
    series = series.replace('rack="attached"', f'rack="{rack}"')
    assert _metric(tmp_path, series) == "1"
    second, out = cycle(url)
    assert second["cycle"] == 2 and second["verdict"] == "UNKNOWN", out[-2000:]
    assert f"attached to {url}" in out and "launch command" not in out and "booting" not in out.lower()
    assert _metric(tmp_path, series) == "-1"


def test_sigterm_mid_run_ends_the_run_and_its_group_and_the_watch_exits_0(tmp_path):
    watch = subprocess.Popen([sys.executable, "-m", "rackgate.cli", "watch", "--state", str(tmp_path / "state"),
                              "--every", "600", "-m", "platform"], cwd=tmp_path, env=user_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pid_file, output = tmp_path / "state" / "run" / "pid", tmp_path / "state" / "run" / "output.txt"
        _until(lambda: pid_file.exists() and output.exists() and "rackgate:" in output.read_text(), watch)
        run_pid = int(pid_file.read_text())
        watch.send_signal(signal.SIGTERM)
        out, _ = watch.communicate(timeout=180)
        assert watch.returncode == 0 and "stopped (signal)" in out, out[-2000:]
        with pytest.raises(ProcessLookupError):
            os.killpg(run_pid, 0)   # the run's whole group is gone
        last = _cycles(tmp_path)[-1]
        assert last["cycle"] == 1 and last["rc"] is None and last["ran"] == 0
    finally:
        _end(watch)
