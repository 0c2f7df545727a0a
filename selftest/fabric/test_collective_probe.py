"""The shipped collective probe, for real: CPU torch, gloo, local processes, fed on stdin exactly
as the suite feeds it inside a container. A healthy world gives w(w+1)/2; a collective that
never completes is cut off at the probe's own bound and leaves no process behind."""
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from rackgate.probes import collective
from rackgate.transport import ports

pytest.importorskip("torch", reason="CPU torch is installed by scripts/selftest.sh (torch==2.13.0+cpu)")

REPO = Path(__file__).resolve().parents[2]


def free_port(span: int = 5) -> int:
    """A base port whose next `span` ports are free too (world w listens on base+w)."""
    return ports.free_port("0.0.0.0", span=span)


def run_probe(args: list[str], env: dict, timeout: float = 240):
    marker = uuid.uuid4().hex
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "RG_SELFTEST_MARK": marker, **env}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-", *args], input=collective.PROBE_PATH.read_text(), text=True,
                          capture_output=True, env=env, timeout=timeout)
    return proc, time.monotonic() - t0, marker


def survivors(marker: str) -> list[int]:
    """PIDs of processes started with this run's marker that are still alive (zombies count)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if f"RG_SELFTEST_MARK={marker}".encode() in (d / "environ").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def test_healthy_worlds_sum_correctly():
    proc, _, marker = run_probe(["--world-sizes", "1,2", "--backend", "gloo", "--timeout", "60", "--grace", "5",
                                 "--master-addr", "127.0.0.1", "--port", str(free_port())], {})
    out = collective.parse(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.worlds[1].status == out.worlds[2].status == "ok"
    assert out.worlds[2].results[1].endswith("result=3 expect=3")
    assert survivors(marker) == []


def test_hung_collective_is_cut_off_and_nothing_survives(tmp_path):
    """The sim's NCCL layer makes all_reduce never return for w > 1 (as when the collective kernel
    never runs); the probe must end the world at timeout + grace and kill its ranks."""
    node = tmp_path / "nodeX"
    node.mkdir()
    (tmp_path / "state.json").write_text(json.dumps({"nodes": {"nodeX": {"fabric": {"collective_hang": True}}}}))
    env = {"RACKGATE_SIM_NODE": str(node), "NCCL_DEBUG": "INFO",
           "PYTHONPATH": os.pathsep.join([str(REPO / "rackgate/sim/nccl"), str(REPO)])}
    proc, secs, marker = run_probe(["--world-sizes", "1,2", "--backend", "gloo", "--timeout", "2", "--grace", "1",
                                    "--master-addr", "127.0.0.1", "--port", str(free_port())], env)
    out = collective.parse(proc.stdout + proc.stderr)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert out.worlds[1].status == "ok"
    assert out.worlds[2].status == "timeout" and out.worlds[2].elapsed_s < 2 + 1 + 3
    assert out.last_completed_minus_one  # the watchdog lines were printed before the kill
    assert survivors(marker) == [], "ranks outlived the probe"


def test_a_rank_that_never_joins_is_bounded():
    """Across nodes with the other node absent: the rendezvous gives up at its bound."""
    proc, secs, marker = run_probe(["--world-sizes", "", "--nnodes", "2", "--node-rank", "0", "--ranks-per-node", "1",
                                    "--master-addr", "127.0.0.1", "--across-port", str(free_port()), "--backend", "gloo",
                                    "--timeout", "2", "--grace", "1", "--join-timeout", "2"], {})
    out = collective.parse(proc.stdout + proc.stderr)
    assert proc.returncode == 1
    assert out.worlds == {} and out.across.status in ("error", "timeout") and out.across.elapsed_s < 2 + 2 + 1 + 3
    assert survivors(marker) == []
