"""Build the simulated rack: state, per-node roots, agents, and the rack-file nodes to reach it."""
from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from ..config import Rack
from ..config.model import Launch, Node
from ..transport import Host, LocalRunner, Spawned, ports
from . import faults as sim_faults
from . import state as sim_state
from .faults import Fault, FaultError, all_faults
from .faults import get as get_fault
from .launch import SHIPPED_RACK, SIM_BENCH, SIM_BENCH_RESULT, SIM_LAUNCH
from .model import write_tokenizer as model_write_tokenizer
from .render import node_env, node_root, render_node
from .tools.ps import sim_pids

# What the suite's rack hooks use (rackgate/hooks/rack.py imports only this module, lazily).
__all__ = ["SHIPPED_RACK", "SIM_BENCH", "SIM_BENCH_RESULT", "SIM_LAUNCH", "Fault", "FaultError", "SimRack", "all_faults", "build",
           "free_port", "get_fault"]

def free_port(host: str = "127.0.0.1") -> int:
    return ports.free_port(host)


def override(model, dotted: str, value):
    """A copy of a (frozen) rack-file model with one dotted key replaced, validated again."""
    head, _, rest = dotted.partition(".")
    if not rest:
        return type(model).model_validate({**model.model_dump(), head: value})
    return model.model_copy(update={head: override(getattr(model, head), rest, value)})


class SimRack:
    """A built simulated rack. stop() ends its agents and removes its directory."""

    def __init__(self, rack: Rack, rack_dir: Path, agents: list[Spawned], keep: bool):
        self.rack, self.dir, self.agents, self.keep = rack, rack_dir, agents, keep

    def stop(self) -> None:
        for a in self.agents:
            a.stop(grace_s=2)
        # The nodes go off with the sim: a process left on one (a start whose reply the suite never
        # got, which it rightly does not kill; a fault's foreign listener) must not outlive the run.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = [p for p in sim_pids(str(self.dir)) if p != os.getpid()]
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            if pids and sig == signal.SIGTERM:
                deadline = time.monotonic() + 2
                while time.monotonic() < deadline and sim_pids(str(self.dir)):
                    time.sleep(0.05)
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def build(rack: Rack, extra_faults: list[str] = (), workdir: str | None = None) -> SimRack:
    """Lay out the sim for a rack file with a [sim] table; returns the rack with its nodes."""
    assert rack.sim is not None
    workdir = workdir or os.environ.get("RACKGATE_SIM_WORKDIR") or None  # kept after the run, for debugging
    rack_dir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="rackgate-sim-", dir=scratch_dir()))
    rack_dir.mkdir(parents=True, exist_ok=True)
    try:
        return _lay_out(rack, extra_faults, rack_dir, keep=workdir is not None)
    except BaseException:
        if workdir is None:  # a build that failed (an unknown fault, no free ports) leaves nothing
            shutil.rmtree(rack_dir, ignore_errors=True)
        raise


SCRATCH_FREE = 256 << 20  # /dev/shm's free space below which the sim stays on disk (a tree: ~3 MB, logs)


def scratch_dir() -> str | None:
    """Where a sim's directory goes (None: the system's temp dir): the user's TMPDIR where set,
    else /dev/shm where it is a memory file system this user may write and execute from (the
    nodes' bin/ holds their tools) with SCRATCH_FREE to spare. Every suite run lays out ~2,500 files and ~770 directories
    and removes them at the end; on this machine's ext4 (mounted with discard) that is ~0.4 CPU s
    of kernel time a run, on tmpfs ~0.03 (docs/performance.md, wave 10). The tree is small (its
    big files are sparse), and the same bytes either way."""
    if os.environ.get("TMPDIR"):
        return None
    shm = "/dev/shm"
    try:
        fs = os.statvfs(shm)
    except OSError:
        return None
    if fs.f_flag & (os.ST_RDONLY | os.ST_NOEXEC) or not os.access(shm, os.W_OK | os.X_OK):
        return None
    if fs.f_bavail * fs.f_frsize < SCRATCH_FREE:  # a container's 64 MiB /dev/shm: its own to fill
        return None
    return shm


def _lay_out(rack: Rack, extra_faults: list[str], rack_dir: Path, keep: bool) -> SimRack:
    st = sim_state.healthy(rack.sim.nodes, rack.gpus_per_node, rack.sim.accuracy)
    st.served_model = rack.server.served_model
    st.container, st.image, st.atom_path = rack.container, rack.image, rack.atom_path  # the sim's own container
    for name in rack.sim.bmc_card0:
        if name not in st.nodes:
            raise ValueError(f"[sim] bmc_card0 names {name!r}, not a sim node ({', '.join(st.nodes)})")
        st.nodes[name].drm_layout = "bmc-card0"
    for spec in [*rack.sim.faults, *extra_faults]:
        sim_faults.apply(st, spec)
    st.faults = [*rack.sim.faults, *extra_faults]
    sim_state.save(rack_dir, st)
    nodes = []
    for name, n in st.nodes.items():
        render_node(rack_dir, name, n)
        reach = n.reach  # a tray the suite cannot reach (rackgate/sim/faults/survey.py)
        nodes.append(Node(name=name, transport=reach.transport if reach else rack.sim.transport,
                          ssh=reach.ssh if reach else rack.sim.ssh_target,
                          data_ip=n.data_ip, tray=n.tray,
                          sysroot=str(node_root(rack_dir, name)), env=node_env(rack_dir, name),
                          container_sysroot=str(rack_dir / name / "container")))
    launch = rack.launch
    if not launch.command:
        launch = Launch(**{**launch.model_dump(), "command": SIM_LAUNCH, "port": free_port()})
    bench = rack.bench
    if not bench.command:
        bench = bench.model_copy(update={"command": SIM_BENCH, "result_path": SIM_BENCH_RESULT})
    built = rack.model_copy(update={"nodes": nodes, "launch": launch, "bench": bench})
    for dotted, value in st.rack_overrides.items():
        built = override(built, dotted, value)
    if not built.serving.tokenizer:  # the sim model's folder on this machine: its tokenizer.json
        (rack_dir / "model").mkdir(exist_ok=True)
        model_write_tokenizer(rack_dir / "model" / "tokenizer.json")
        built = override(built, "serving.tokenizer", str(rack_dir / "model"))
    agents = []
    for name, n in st.nodes.items():
        if n.train_s > 0:
            h = Host(name, LocalRunner(name, node_env(rack_dir, name)))
            agents.append(h.spawn([sys.executable, "-m", "rackgate.sim.agent", "--rack-dir", str(rack_dir), "--node", name],
                                  str(rack_dir / "logs" / f"agent-{name}.log")))
    # Processes a fault leaves running on a node before the suite starts (e.g. a leftover
    # ubench listener); the sim ends them at teardown.
    for i, bg in enumerate(st.background):
        h = Host(bg.node, LocalRunner(bg.node, node_env(rack_dir, bg.node)))
        agents.append(h.spawn(["sh", "-c", bg.cmd], str(rack_dir / "logs" / f"background-{i}-{bg.node}.log"), bg.env))
    return SimRack(built, rack_dir, agents, keep=keep)
