"""Build the simulated rack: state, per-node roots, agents, and the rack-file nodes to reach it."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..config import Rack
from ..config.model import Launch, Node
from ..transport import Host, LocalRunner, Spawned, ports
from . import faults as sim_faults
from . import state as sim_state
from .render import node_env, node_root, render_node

SHIPPED_RACK = Path(__file__).resolve().parent.parent.parent / "racks" / "sim.toml"

# The runbook's launch command, with the sim's module in place of atom.entrypoints.openai_server.
SIM_LAUNCH = (
    f"{sys.executable} -m rackgate.sim.atom_server --model /models/Kimi-K3"
    " --served-model-name {served_model} --trust-remote-code -tp 1"
    " --data-parallel-size {dp_size} --data-parallel-size-local {dp_local}"
    " --data-parallel-rank {dp_start} --data-parallel-master-ip {head_ip}"
    " --data-parallel-master-port 29500 --data-parallel-base-port 29700"
    " --enable-expert-parallel --enable-dp-attention --kv_cache_dtype fp8"
    " --max-num-seqs 8 --max-num-batched-tokens 2048 --gpu-memory-utilization 0.90"
    " --torch-profiler-dir /tmp/rackgate/profile"
    " --host {head_ip} --server-port {port}"
)
# The runbook's benchmark_serving run, scaled down, with the sim's stand-in (same output format).
SIM_BENCH_RESULT = "/tmp/rackgate/bench/result.json"
SIM_BENCH = (
    f"{sys.executable} -m rackgate.sim.benchmark_serving --backend openai --host {{head_ip}} --port {{port}}"
    " --model /models/Kimi-K3 --tokenizer /models/Kimi-K3 --trust-remote-code"
    " --served-model-name {served_model} --dataset-name random --random-input-len 256 --random-output-len 32"
    " --random-range-ratio 1.0 --max-concurrency 8 --num-prompts 32 --ignore-eos"
    " --percentile-metrics ttft,tpot,itl,e2el --save-result --result-dir /tmp/rackgate/bench"
    " --result-filename result.json"
)


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
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def build(rack: Rack, extra_faults: list[str] = (), workdir: str | None = None) -> SimRack:
    """Lay out the sim for a rack file with a [sim] table; returns the rack with its nodes."""
    assert rack.sim is not None
    workdir = workdir or os.environ.get("RACKGATE_SIM_WORKDIR") or None  # kept after the run, for debugging
    rack_dir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="rackgate-sim-"))
    rack_dir.mkdir(parents=True, exist_ok=True)
    st = sim_state.healthy(rack.sim.nodes, rack.gpus_per_node, rack.sim.accuracy)
    st["served_model"] = rack.server.served_model
    st["container"], st["image"], st["atom_path"] = rack.container, rack.image, rack.atom_path  # the sim's own container
    for spec in [*rack.sim.faults, *extra_faults]:
        sim_faults.apply(st, spec)
    st["faults"] = [*rack.sim.faults, *extra_faults]
    sim_state.save(rack_dir, st)
    nodes = []
    for name, n in st["nodes"].items():
        render_node(rack_dir, name, n)
        reach = n.get("reach", {})  # a tray the suite cannot reach (rackgate/sim/faults/survey.py)
        nodes.append(Node(name=name, transport=reach.get("transport", rack.sim.transport),
                          ssh=reach.get("ssh", rack.sim.ssh_target),
                          data_ip=n["data_ip"], tray=n["tray"],
                          sysroot=str(node_root(rack_dir, name)), env=node_env(rack_dir, name),
                          container_sysroot=str(rack_dir / name / "container")))
    launch = rack.launch
    if not launch.command:
        launch = Launch(**{**launch.model_dump(), "command": SIM_LAUNCH, "port": free_port()})
    bench = rack.bench
    if not bench.command:
        bench = bench.model_copy(update={"command": SIM_BENCH, "result_path": SIM_BENCH_RESULT})
    built = rack.model_copy(update={"nodes": nodes, "launch": launch, "bench": bench})
    for dotted, value in st.get("rack_overrides", {}).items():
        built = override(built, dotted, value)
    agents = []
    for name, n in st["nodes"].items():
        if n.get("train_s", 0) > 0:
            h = Host(name, LocalRunner(name, node_env(rack_dir, name)))
            agents.append(h.spawn([sys.executable, "-m", "rackgate.sim.agent", "--rack-dir", str(rack_dir), "--node", name],
                                  str(rack_dir / "logs" / f"agent-{name}.log")))
    # Processes a fault leaves running on a node before the suite starts (e.g. a leftover
    # ubench listener): [{"node", "cmd", "env"}]; the sim ends them at teardown.
    for i, bg in enumerate(st.get("background", [])):
        h = Host(bg["node"], LocalRunner(bg["node"], node_env(rack_dir, bg["node"])))
        log = str(rack_dir / "logs" / f"background-{i}-{bg['node']}.log")
        agents.append(h.spawn(["sh", "-c", bg["cmd"]], log, bg.get("env")))
    return SimRack(built, rack_dir, agents, keep=workdir is not None)
