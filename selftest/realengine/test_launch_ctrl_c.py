"""Ctrl-C during a real-engine launch run (issue 24 item 5): the one-node local rack of
test_launch.py, whose `[launch] command` starts `transformers serve`, run as a user runs it; the
POINT_PLUGIN of test_cleanup.py holds the run during the engine's boot or during a check (an event,
not a timer) and the test sends SIGINT there. The run ends; the engine and every process of the
run's PID tree are gone, and no temporary directory or port claim is left. The time from the
signal to the exit is measured (docs/performance.md), never asserted."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from ..harness import REPO, user_env
from ..test_cleanup import POINT_PLUGIN, _alive, _as_from_a_shell, _tree, processes_mentioning, wait_for
from .test_launch import BOOT, SANITY, _rack

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(900)]


def _engine_tree(tmp_path: Path, run_pid: int) -> set[tuple[int, str]]:
    """The launched engine's processes (setsid'd: not under the run's PID tree) and theirs:
    every process whose environment names this test's directory (RG_LAUNCH_DIR), but the run."""
    pids = {int(p.split()[0]) for p in processes_mentioning(str(tmp_path))} - {run_pid}
    return set().union(*(_tree(pid) for pid in pids))


@pytest.mark.parametrize("point", ["boot", "check"])
def test_ctrl_c_during_a_real_engine_launch_run_leaves_nothing(point, engine_bin, models, tmp_path):
    mark, claims = tmp_path / "holding", tmp_path / "claims"
    tmp = Path(tempfile.mkdtemp(prefix="rgce", dir="/tmp"))
    rack = _rack(tmp_path, engine_bin, models.cache, models.name("healthy"))
    (tmp_path / "rg_point_plugin.py").write_text(POINT_PLUGIN)
    env = {**user_env(), "RG_HOLD_MARK": str(mark), "RG_HOLD_AT": point, "TMPDIR": str(tmp),
           "RACKGATE_PORT_CLAIMS": str(claims),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "rg_point_plugin", "-q", "-o", "addopts=",
         "--rack", str(rack), BOOT, SANITY],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        preexec_fn=_as_from_a_shell)
    try:
        assert wait_for(mark.exists, 600, proc), proc.stdout.read() if proc.poll() is not None else "no hold"
        engine = _engine_tree(tmp_path, proc.pid)
        assert engine, "the engine should be running before the interrupt"
        if point == "check":
            assert mark.read_text() == SANITY, mark.read_text()  # the engine booted: a check is running
        tree = _tree(proc.pid) | engine
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    try:
        print(f"Ctrl-C at {point}: the run exited {took:.1f} s after SIGINT (stop_grace_s = 10)")
        assert "nterrupt" in out, out[-2000:]
        assert wait_for(lambda: not any(_alive(p) for p in tree), 30), [p for p in tree if _alive(p)]
        assert processes_mentioning(str(tmp_path)) == [], "the engine (or a child) outlived the run"
        assert processes_mentioning(str(tmp)) == [], "a child of the run outlived it"
        assert list(tmp.iterdir()) == [], f"left in the run's TMPDIR: {list(tmp.iterdir())}"
        assert sorted(p.name for p in claims.iterdir()) in ([], [".lock"]) if claims.exists() else True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
