"""A simulated ATOM server alone, one node, for the accuracy self-tests: the sim rack's state
(faults, [sim] accuracy) and the runbook's launch flags, on a free loopback port."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import requests

from rackgate import config
from rackgate.sim.rack import SHIPPED_RACK, build, free_port

from ..harness import REPO

MODEL = "moonshotai/Kimi-K3"


@contextlib.contextmanager
def sim_server(*faults: str, accuracy: float | None = None, ready_s: float = 60):
    """Yields the server's base URL; the server and the sim directory are gone afterwards."""
    rack = config.load(SHIPPED_RACK)
    if accuracy is not None:
        rack = rack.model_copy(update={"sim": rack.sim.model_copy(update={"accuracy": accuracy})})
    sim = build(rack, list(faults), workdir=None)
    port = free_port()
    argv = [sys.executable, "-m", "rackgate.sim.atom_server", "--model", "/models/Kimi-K3",
            "--served-model-name", MODEL, "--max-num-seqs", "8", "--host", "127.0.0.1", "--server-port", str(port)]
    env = {**os.environ, **sim.rack.nodes[0].env}
    log = open(sim.dir / "server.log", "w")
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_s
        while True:
            try:
                if requests.get(url + "/v1/models", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise AssertionError(f"sim server did not come up: {(sim.dir / 'server.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=10)
        log.close()
        sim.stop()
