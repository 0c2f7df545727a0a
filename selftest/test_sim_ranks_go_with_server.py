"""The sim's ATOM server forks one process per DP rank; when the server process is stopped by its
PID (SIGTERM to it alone, as `python -m rackgate.sim serve` and the suite's launcher do), its
ranks go too: nothing of ours is left holding ports and CPU."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rackgate.transport.deadline import wait_for

from .harness import REPO

pytestmark = pytest.mark.suite


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(p) for p in text]
    return out


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_ranks_end_with_the_server_process() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "rackgate.sim", "serve", "--port", "0"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    ranks: list[int] = []
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("serving http://"), first
        url = first.split()[1]
        import requests

        def up() -> bool:
            try:
                return requests.get(url + "/v1/models", timeout=5).status_code == 200
            except requests.RequestException:
                return False

        assert wait_for(up, 120, 0.2), f"the sim server at {url} did not answer /v1/models in 120 s"
        servers = _children(proc.pid)
        assert len(servers) == 1, f"serve started {servers}"
        ranks = _children(servers[0])
        assert len(ranks) == 16, f"the rack's 16 DP ranks: {ranks}"
        os.kill(servers[0], signal.SIGKILL)  # the server alone, by its PID, the hardest way
        assert wait_for(lambda: all(_gone(r) for r in ranks), 60, 0.1), \
            f"ranks outlived their server: {[r for r in ranks if not _gone(r)]}"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
        for r in ranks:  # never leave ours behind, whatever the assertion said
            if not _gone(r):
                os.kill(r, signal.SIGKILL)
