"""python -m rackgate.sim serve [--fault NAME]... [--port P]: a simulated ATOM server alone.

For rehearsing attach mode (pytest -m gate --atom-url URL --served-model NAME) and for the
self-tests. Runs in the foreground until interrupted (Ctrl-C or SIGTERM); then stops the server
it started (by PID) and removes its sim directory.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

from .. import config
from . import faults as sim_faults
from .rack import SHIPPED_RACK, build, free_port

_HELD = {"holding": False, "pending": 0}


def _exit_on_sigterm(signum, _frame):
    """SIGTERM unwinds through the finally blocks (the server stopped, the directory gone); while
    the server's process is being started and recorded, it waits until it is recorded."""
    if _HELD["holding"]:
        _HELD["pending"] = signum
        return
    raise SystemExit(128 + signum)


def main() -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    ap = argparse.ArgumentParser(prog="python -m rackgate.sim")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run a simulated ATOM server on loopback")
    s.add_argument("--fault", action="append", default=[], help="sim fault name (repeatable)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0, help="0: a free port")
    s.add_argument("--served-model", default=None)
    a = ap.parse_args()
    rack = config.load(SHIPPED_RACK)
    if a.served_model:
        rack = rack.model_copy(update={"server": rack.server.model_copy(update={"served_model": a.served_model})})
    try:
        sim = build(rack, a.fault)
    except sim_faults.FaultError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    server = None
    try:
        node = sim.rack.nodes[0]
        port = a.port or free_port(a.host)
        argv = [sys.executable, "-m", "rackgate.sim.atom_server", "--model", "/models/Kimi-K3",
                "--served-model-name", rack.server.served_model, "--host", a.host, "--server-port", str(port),
                # the whole rack's DP ranks behind this one API, so routing hints reach every rank
                "--data-parallel-size", str(sim.rack.gpu_count), "--data-parallel-size-local", str(sim.rack.gpu_count),
                "--max-num-batched-tokens", "2048", "--max-num-seqs", "8", "--enable-expert-parallel",
                "--torch-profiler-dir", "/tmp/rackgate/profile"]
        print(f"serving http://{a.host}:{port} model={rack.server.served_model} faults={a.fault}", flush=True)
        _HELD["holding"] = True
        server = subprocess.Popen(argv, env={**os.environ, **node.env})
        _HELD["holding"] = False
        if _HELD["pending"]:
            raise SystemExit(128 + _HELD["pending"])
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if server is not None:
            _stop(server)
        sim.stop()


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
