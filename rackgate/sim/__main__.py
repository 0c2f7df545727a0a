"""python -m rackgate.sim serve [--fault NAME]... [--port P]: a simulated ATOM server alone.

For rehearsing attach mode (pytest -m gate --atom-url URL --served-model NAME) and for the
self-tests. Runs in the foreground until interrupted; removes its sim directory on exit.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

from .. import config
from . import faults as sim_faults
from .rack import SHIPPED_RACK, build, free_port


def main() -> int:
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
    node = sim.rack.nodes[0]
    port = a.port or free_port(a.host)
    argv = [sys.executable, "-m", "rackgate.sim.atom_server", "--model", "/models/Kimi-K3",
            "--served-model-name", rack.server.served_model, "--host", a.host, "--server-port", str(port),
            # the whole rack's DP ranks behind this one API, so routing hints reach every rank
            "--data-parallel-size", str(sim.rack.gpu_count), "--data-parallel-size-local", str(sim.rack.gpu_count),
            "--max-num-batched-tokens", "2048", "--max-num-seqs", "8", "--enable-expert-parallel",
            "--torch-profiler-dir", "/tmp/rackgate/profile"]
    print(f"serving http://{a.host}:{port} model={rack.server.served_model} faults={a.fault}", flush=True)
    env = {**os.environ, **node.env}
    try:
        return subprocess.call(argv, env=env)
    except KeyboardInterrupt:
        return 0
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(main())
