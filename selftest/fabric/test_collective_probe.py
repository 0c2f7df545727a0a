"""The shipped collective probe, for real: gloo, local processes, fed on stdin exactly as the
suite feeds it inside a container, with CPU torch and with the sim's stand-in torch (what a sim
node's python gets: rackgate/sim/nccl/standin). A healthy world gives w(w+1)/2; a collective
that never completes is cut off at the probe's own bound and leaves no process behind."""
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

pytestmark = pytest.mark.suite

REPO = Path(__file__).resolve().parents[2]


def need_torch():
    pytest.importorskip("torch", reason="CPU torch is installed by scripts/setup.sh (torch==2.13.0+cpu)")


def sim_env(tmp_path, fabric: dict, torch_mode: str = "standin", hide_torch: bool = False) -> dict:
    """A sim node's environment (its sitecustomize on PYTHONPATH, its state); hide_torch puts a
    `torch` that cannot be imported first on the path, as on a machine without torch."""
    node = tmp_path / "nodeX"
    node.mkdir()
    (tmp_path / "state.json").write_text(json.dumps({"nodes": {"nodeX": {"fabric": fabric}}}))
    path = [str(REPO / "rackgate/sim/nccl"), str(REPO)]
    if hide_torch:
        (tmp_path / "hide" / "torch").mkdir(parents=True)
        (tmp_path / "hide" / "torch" / "__init__.py").write_text("raise ImportError('no torch on this machine')\n")
        path.insert(0, str(tmp_path / "hide"))
    return {"RACKGATE_SIM_NODE": str(node), "NCCL_DEBUG": "INFO", "RACKGATE_SIM_TORCH": torch_mode,
            "PYTHONPATH": os.pathsep.join(path)}


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
    need_torch()
    proc, _, marker = run_probe(["--world-sizes", "1,2", "--backend", "gloo", "--timeout", "60", "--grace", "5",
                                 "--master-addr", "127.0.0.1", "--port", str(free_port())], {})
    out = collective.parse(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.worlds[1].status == out.worlds[2].status == "ok"
    assert out.worlds[2].results[1].endswith("result=3 expect=3")
    assert survivors(marker) == []


def test_sim_node_without_torch_runs_a_real_collective(tmp_path):
    """A machine without torch (the README's first command installs none): the sim node's python
    gets the stand-in, whose ranks are separate processes that rendezvous and reduce over TCP."""
    env = sim_env(tmp_path, {"transport": "P2P/CUMEMMNNVL"}, hide_torch=True)
    proc, _, marker = run_probe(["--world-sizes", "1,2,4", "--backend", "auto", "--timeout", "30", "--grace", "5",
                                 "--port", str(free_port())], env)
    out = collective.parse(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.torch == "0+rackgate.sim.standin"
    assert [out.worlds[w].status for w in (1, 2, 4)] == ["ok", "ok", "ok"]
    assert out.worlds[4].results == {r: "backend=gloo device=cpu result=10 expect=10" for r in range(4)}
    assert out.transports == ["P2P/CUMEMMNNVL"]
    assert survivors(marker) == []


def test_standin_rank_pids_are_distinct_processes(tmp_path):
    """Not a computed answer: each rank's NCCL line carries its own PID, all different from the probe's."""
    env = sim_env(tmp_path, {}, hide_torch=True)
    proc, _, _ = run_probe(["--world-sizes", "4", "--backend", "gloo", "--timeout", "30", "--grace", "5",
                            "--port", str(free_port())], env)
    pids = {line.split(":")[1] for line in proc.stdout.splitlines() if "NCCL INFO Channel" in line}
    start = next(line for line in proc.stdout.splitlines() if line.startswith("RGCOLL-START"))
    assert len(pids) == 4 and start.split()[1].removeprefix("pid=") not in pids, proc.stdout


@pytest.mark.parametrize("torch_mode", ["standin", "installed"])
def test_hung_collective_is_cut_off_and_nothing_survives(tmp_path, torch_mode):
    """The sim's NCCL layer makes all_reduce never return for w > 1 (as when the collective kernel
    never runs); the probe must end the world at its bound and kill its ranks."""
    if torch_mode == "installed":
        need_torch()
    env = sim_env(tmp_path, {"collective_hang": True}, torch_mode)
    proc, _, marker = run_probe(["--world-sizes", "1,2", "--backend", "gloo", "--timeout", "2", "--grace", "1",
                                    "--join-timeout", "60", "--master-addr", "127.0.0.1", "--port", str(free_port())],
                                   env)
    out = collective.parse(proc.stdout + proc.stderr)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert out.worlds[1].status == "ok"
    assert out.worlds[2].status == "timeout" and "killed=0,1" in proc.stdout
    assert out.last_completed_minus_one  # the watchdog lines were printed before the kill
    assert survivors(marker) == [], "ranks outlived the probe"


@pytest.mark.parametrize("torch_mode", ["standin", "installed"])
def test_a_rank_that_never_joins_is_bounded(tmp_path, torch_mode):
    """Across nodes with the other node absent: the rendezvous gives up at its bound."""
    if torch_mode == "installed":
        need_torch()
    proc, _, marker = run_probe(["--world-sizes", "", "--nnodes", "2", "--node-rank", "0", "--ranks-per-node", "1",
                                    "--master-addr", "127.0.0.1", "--across-port", str(free_port()), "--backend", "gloo",
                                    "--timeout", "2", "--grace", "1", "--join-timeout", "2"],
                                   sim_env(tmp_path, {}, torch_mode))
    out = collective.parse(proc.stdout + proc.stderr)
    assert proc.returncode == 1
    assert out.worlds == {} and out.across.status in ("error", "timeout")
    assert survivors(marker) == []
