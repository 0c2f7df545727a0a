"""The README's gate command, exactly as a user types it, against the real engine (issue 12.6),
and the quick gate's cancellation proved on it (issue 12.2).

    pytest -m gate --atom-url URL --served-model NAME --gsm8k-dir DIR

run from the project directory, plugins autoloaded, no rack file (the attach profile). Asserted:
- the `!` server (SmolLM2 with NaN logits and '!' at id 0): SRV-SANITY FAILED naming '!', and it
  is the first FAILED item; the costly checks ERROR "not run: SRV-SANITY failed (see it)";
- the healthy server: no check says the server is broken (ACC-QUICK may fail: SmolLM2 is far
  below Kimi-K3's threshold, and its message says so).
Order, not seconds: the seconds are in benchmarks/time_to_verdict.py.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rackgate.report import junit

from ..harness import REPO
from . import runners

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(1800)]

SANITY = "tests/serving/test_server.py::test_sanity"
QUICK = "tests/accuracy/test_gsm8k_quick.py::test_gsm8k_quick"
SERVER_BROKEN_ROWS = ("SRV-SANITY", "SRV-MODELS", "SRV-CONSISTENCY", "ACC-BUDGET")


def gate_command(srv, tmp_path: Path) -> list[str]:
    """The README's attach command (plus where this run's reports go)."""
    return ["pytest", "-m", "gate", "--atom-url", srv.url, "--served-model", srv.model,
            "--gsm8k-dir", str(runners.GSM8K_DIR), f"--junitxml={tmp_path / 'junit.xml'}",
            f"--alluredir={tmp_path / 'allure'}"]


def run_gate(srv, tmp_path: Path, timeout: float = 1500):
    cmd = gate_command(srv, tmp_path)
    p = subprocess.run([sys.executable, "-m", *cmd], check=False, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert srv.alive(), "the suite stopped a server it only attached to"
    return p, junit.read(tmp_path / "junit.xml")


@pytest.mark.skipif(not (runners.GSM8K_DIR / "test.jsonl").exists(), reason=f"no GSM8K JSONL in {runners.GSM8K_DIR}")
def test_gate_names_the_bang_server_first(serve, tmp_path):
    with serve("bang") as srv:
        p, outcomes = run_gate(srv, tmp_path)
    assert p.returncode != 0
    assert outcomes[SANITY].status == "failed", p.stdout[-3000:]
    assert "every character is '!'" in outcomes[SANITY].message
    first = next(k for k, o in outcomes.items() if o.status == "failed")
    assert first == SANITY, (first, p.stdout[-3000:])
    assert outcomes[QUICK].status == "error" and "not run: SRV-SANITY failed (see it)" in outcomes[QUICK].message


@pytest.mark.skipif(not (runners.GSM8K_DIR / "test.jsonl").exists(), reason=f"no GSM8K JSONL in {runners.GSM8K_DIR}")
def test_gate_on_the_healthy_server_blames_nothing_on_the_server(healthy, tmp_path):
    p, outcomes = run_gate(healthy, tmp_path)
    assert outcomes, p.stdout[-3000:] + p.stderr[-2000:]
    from rackgate.catalogue import row
    for tid, o in outcomes.items():
        if o.status != "failed":
            continue
        assert tid == QUICK, (tid, o.message[:600])  # nothing else says the server is broken
        assert "below" in o.message and "model" in o.message, o.message[:800]
    for r in SERVER_BROKEN_ROWS:
        assert row(r)  # the rows exist; none of their items failed (above)
    assert outcomes[SANITY].status == "passed", outcomes[SANITY]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its threads (/proc/PID/stat)."""
    f = Path(f"/proc/{pid}/stat").read_text()
    rest = f[f.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def _busy(pid: int, window: float = 1.0) -> float:
    a = _cpu_s(pid)
    time.sleep(window)
    return _cpu_s(pid) - a


@pytest.mark.skipif(not (runners.GSM8K_DIR / "test.jsonl").exists(), reason=f"no GSM8K JSONL in {runners.GSM8K_DIR}")
def test_a_decided_gate_leaves_the_server_idle(serve):
    """A long generation in flight (the `!` server never stops before max_tokens), cancelled as the
    quick gate cancels when it decides: the server's own CPU time stops growing."""
    from rackgate.atom.client import Client
    from rackgate.gsm8k import quick, setup
    task = setup._task(str(runners.GSM8K_DIR), 5, 1234, "chat", 100000, "</s>")
    with serve("bang") as srv:
        workers = quick._Workers(task, lambda: Client(srv.url, srv.model, 900), 1)
        box, done, handle = workers.submit(0, task.request(0), 900)
        deadline = time.monotonic() + 300
        while handle._resp is None and time.monotonic() < deadline:  # the stream is open
            time.sleep(0.2)
        busy = max(_busy(srv.pid) for _ in range(3))
        assert busy > 0.2, f"the server is not generating ({busy:.2f} CPU s/s): nothing to cancel"
        workers.close()  # what ask() does once the gate has decided
        assert done.wait(30) and "cancelled" in str(box[0])
        # idle: within a bounded wait, a one-second window in which the server uses no CPU
        idle_by = time.monotonic() + 60
        while _busy(srv.pid) > 0.05:
            assert time.monotonic() < idle_by, "the server kept generating after the stream was closed"
        tiny = srv.completion("The capital of France is", max_tokens=1, timeout=60)
        assert tiny.status == 200
