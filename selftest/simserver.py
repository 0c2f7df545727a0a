"""A simulated ATOM server alone (python -m rackgate.sim serve), for attach-mode self-tests."""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

from .harness import REPO


@contextlib.contextmanager
def sim_server(*faults: str, served_model: str = "moonshotai/Kimi-K3", ready_s: float = 30):
    cmd = [sys.executable, "-m", "rackgate.sim", "serve", "--served-model", served_model]
    for f in faults:
        cmd += ["--fault", f]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        line = proc.stdout.readline()
        m = re.match(r"serving (\S+) ", line)
        assert m, f"sim server did not start: {line}"
        url = m.group(1)
        deadline = time.monotonic() + ready_s
        import requests
        while True:
            try:
                requests.get(url + "/v1/models", timeout=2)
                break
            except requests.ConnectionError:
                assert proc.poll() is None and time.monotonic() < deadline, "sim server never answered"
                time.sleep(0.2)
        yield proc, url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
