"""No process the suite started outlives it: after a run, after a failing test, after Ctrl-C."""
import signal
import subprocess
import sys
import time
from pathlib import Path

from .harness import REPO, run_suite


def processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line or environment mentions text (the run's sim directory:
    every sim node process carries RACKGATE_SIM_NODE=<dir>/nodeN)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            blob = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in blob and state != "Z":
            found.append(f"{proc.name} {(proc / 'cmdline').read_bytes()[:120]!r}")
    return found


def test_nothing_left_after_a_failing_gate_run(tmp_path):
    simdir = tmp_path / "sim"
    run = run_suite(tmp_path, "-m", "gate or fabric", "--sim-fault", "bang-tokens", "--sim-fault", "slow-training",
                    env={"RACKGATE_SIM_WORKDIR": str(simdir)})
    assert run.ids("failed"), run.stdout[-2000:]
    assert (simdir / "node1" / "container" / "tmp" / "rackgate" / "atom-node1.log").exists()  # the server really ran
    assert processes_mentioning(str(simdir)) == []
    assert processes_mentioning(f"--rack-dir {simdir}") == []


def test_nothing_left_after_ctrl_c(tmp_path):
    simdir = tmp_path / "sim"
    log = simdir / "node1" / "container" / "tmp" / "rackgate" / "atom-node1.log"
    # A stuck link keeps FAB-STATE waiting; interrupt while the server is up and a check is waiting.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-o", "addopts=",
         "tests/serving", "tests/fabric", "--sim-fault", "stuck-link"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**__import__("os").environ, "RACKGATE_SIM_WORKDIR": str(simdir)})
    deadline = time.monotonic() + 60
    while not (log.exists() and "ready to accept" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
        time.sleep(0.2)
    time.sleep(1.5)
    assert processes_mentioning(str(simdir)), "the server should be running before the interrupt"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert "KeyboardInterrupt" in out or "Interrupted" in out or "interrupted" in out, out[-2000:]
    time.sleep(0.5)
    assert processes_mentioning(str(simdir)) == [], out[-2000:]
