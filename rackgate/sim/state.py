"""The sim's model of the rack: typed dataclasses on the build side, JSON on disk so the node
executables can read it.

`Rack` holds every node's facts (modules, parameters, GPUs and their UALink attributes, dmesg
lines) with the areas' extensions as typed fields (`Node.fabric`, `Node.plat`, `Node.listen`,
`Node.reach`, `Gpu.bdf`, ...), and the server's behaviour (`ServerState`). `healthy()` builds a
healthy rack, faults (rackgate/sim/faults) change its attributes, `Rack.to_json()` is state.json
and `Rack.from_json()` reads it back, refusing a key it does not know with a one-line error. The
node executables (rackgate/sim/tools) read state.json as plain JSON (`load`, `this_node`).
"""
from __future__ import annotations

import dataclasses
import time
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from . import nodeview
from .engine.behaviour import ServerFaults
from .nodeview import STATE_FILE, load, node_dir, this_node  # noqa: F401  (the node side, re-exported)
from .render import extensions

HEALTHY_PPOD = "0x5a1c0de0000000000000000000000001"


class StateError(ValueError):
    pass


# --- to and from JSON -------------------------------------------------------------------------
def _from(tp, value, where: str):
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise StateError(f"state.json {where}: expected an object, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp) if f.init}
        unknown = sorted(set(value) - names)
        if unknown:
            raise StateError(f"state.json {where}: unknown key(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(names))}")
        return tp(**{k: _from(hints[k], v, f"{where}.{k}") for k, v in value.items()})
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        return _from(next(a for a in args if a is not type(None)), value, where)
    if origin is list and args and dataclasses.is_dataclass(args[0]):
        return [_from(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return {k: _from(args[1], v, f"{where}.{k}") for k, v in value.items()}
    return value


def _json(obj):
    """Plain JSON of a state object; an optional field left at None is left out."""
    if dataclasses.is_dataclass(obj):
        return {f.name: _json(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not (getattr(obj, f.name) is None and f.default is None)}
    if isinstance(obj, (list, tuple)):
        return [_json(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _json(v) for k, v in obj.items()}
    return obj


class JsonState:
    def to_json(self) -> dict:
        return _json(self)

    @classmethod
    def from_json(cls, data: dict, where: str = "state"):
        return _from(cls, data, where)


# --- the state --------------------------------------------------------------------------------
@dataclass
class Ras(JsonState):
    """A GPU's hardware error counters (rackgate/sim/rasfiles.py writes them in the kernel's formats;
    rackgate/sim/areas/ras.py sets the healthy values, faults change them)."""
    blocks: dict[str, list[int]]  # RAS block -> [ue, ce] or [ue, ce, de] (UMC)
    bad_pages: int = 0  # retired pages in ras/gpu_vram_bad_pages
    bad_page_flag: str = "R"
    features: int = 0
    aer: dict[str, dict[str, int]] = field(default_factory=dict)  # aer_dev_* -> error name -> count
    replay: int = 0  # pcie_replay_count
    ras_dir: bool = True  # False: no ras/ directory (RAS not enabled on this board)
    noise: str = ""  # the stage whose runs add a correctable UMC error now and then (healthy)
    rises: list[dict] = field(default_factory=list)  # {stage, counter, by[, every]}: a fault's rises
    throttle: dict = field(default_factory=dict)  # {ppt_since, ppt_fraction}: power throttling (amd-smi metric)
    layout: str = "err_count"  # per-block counter files: "err_count" (<block>_err_count) or "aca" (aca_<block>)
    events: dict[str, int] = field(default_factory=dict)  # ras/event_state: event name -> count


@dataclass
class Gpu(JsonState):
    card: int
    accel_state: str  # UALink sysfs attributes, in the driver's formats
    accel_id: int
    link_type: str
    ppod_id: str
    vpod_id: str
    local_accels: str
    station_lane_en_bitmap: str
    hbm_gib: int
    stuck: bool = False  # the link never trains (FAB-STATE)
    bdf: str | None = None  # PCI address (rackgate/sim/areas/plat.py)
    bandwidth: str | None = None  # ualink bandwidth / latency (rackgate/sim/areas/fab.py)
    latency: str | None = None
    ras: Ras | None = None  # error counters (rackgate/sim/areas/ras.py)


@dataclass
class Fabric(JsonState):
    """What fabric faults change (rackgate/sim/areas/fab.py, the ubench stand-ins, the sim's NCCL)."""
    bad_tray: bool = False
    npa_timeout: bool = False
    lsdma_errors: bool = False
    bw_factor: float = 1.0
    collective_factor: float = 1.0  # the collectives' bus-bandwidth rate (rackgate/sim/nccl/sitecustomize.py)
    tcp_fallback: bool = False
    collective_hang: bool = False
    transport: str = "P2P/CUMEMMNNVL"
    smi_bandwidth: int | None = None
    # the collectives' data (rackgate/sim/nccl/sitecustomize.py): by GPU index (str)
    corrupt: dict[str, dict[str, int]] = field(default_factory=dict)  # gpu -> {"above": bytes, "after": calls}
    wrong_peer: list[int] = field(default_factory=list)  # GPUs whose all_to_all misaddresses its peers
    drop_link: dict[str, list[str]] = field(default_factory=dict)  # gpu -> peers ("node3/gpu0") its link drops


@dataclass
class Plat(JsonState):
    """A node's platform (rackgate/sim/areas/plat.py writes it out; the sim's docker, ps and
    perf_setup stand-ins read it from state.json)."""
    perf_reports: list[dict]  # perf_setup runs: at, mode, passed, failed, result, tbp_ok
    own: dict[str, Any]  # our container: id, status, exit_code, image, network_mode, devices, env, ...
    foreign: list[dict]  # other people's containers: name, image, status, created, id
    removed_creates: list[dict]  # create events of containers already removed
    procs: list[dict]  # processes: pid, comm, state, ppid, cgroup
    kfd: list[int]  # pids holding /dev/kfd
    shm: list[dict]  # /dev/shm segments: name, size, mtime
    atom: dict[str, Any]  # the ATOM tree in the container: patched, zero, elsewhere, stock_envs
    py_spy: bool  # py-spy installed in the container
    prefix: str  # the rocjitsu prefix in /app/rjprefix: "image" (the image's copy) or "required"


@dataclass
class Reach(JsonState):
    """How the suite reaches a node, when not as the rack file's [sim] says (an unreachable tray)."""
    transport: str
    ssh: str


@dataclass
class Node(JsonState):
    index: int
    tray: int
    data_ip: str
    boot_time: float
    modules: list[str]
    kfd: bool
    params: dict[str, str]  # /sys/module/amdgpu/parameters
    dmesg: list  # [printk seconds since boot, line]
    train_s: float  # seconds until the links finish training (agent.py)
    gpus: list[Gpu]
    fabric: Fabric | None = None  # rackgate/sim/areas/fab.py
    plat: Plat | None = None  # rackgate/sim/areas/plat.py
    listen: list | None = None  # [[addr, port]] TCP listeners (rackgate/sim/areas/survey.py)
    reach: Reach | None = None
    drm_layout: str = "plain"  # "bmc-card0": a BMC video card holds card0 (rackgate/sim/drm.py)
    # node path -> content of the files a fault declares with their healthy value (Fault.files;
    # rendered by rackgate/sim/areas/files.py), e.g. {"/proc/sys/kernel/numa_balancing": "0\n"}
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class ServerState(JsonState):
    """The sim server's section (state["server"]). Areas set the healthy values
    (rackgate/sim/areas/srv.py, acc.py), faults change them (rackgate/sim/faults/)."""
    accuracy: float = 0.96  # the model's GSM8K accuracy (rackgate/sim/gsm8k.py)
    gsm8k_dir: str = ""  # the GSM8K data the model answers from
    api: str = "image"  # "image": the runbook image's HTTP behaviour; "main": current ATOM main
    silicon: str = "B0"  # what the sim's GPUs are ("A0" needs B0->A0 translation)
    store_entries: int = 1976  # translation-store entries of the rocjitsu prefix the hook finds
    step_s: float = 0.08  # seconds per boot phase
    image_extra_torch_gb: float = 0.0  # GB more peak torch memory per rank
    decode_s_per_token: float = 0.0  # seconds each generated token takes on a rank
    # The simulated image's time to first token: no request is answered sooner than this from its
    # arrival (prefill and scheduling on the rack), whatever this machine's CPU adds below it, so the
    # benchmark's throughput, TTFT and TPOT are properties of the simulated image, as on a real rack,
    # and CPU load barely moves them (engine/routes.py SimServer.forward).
    first_token_s: float = 0.2
    ignores_kv_cache_dtype_flag: bool = False  # the engine runs with kv_cache_dtype "auto"
    megamoe_experts: str = "global"  # "per_rank": the runbook image's MegaMoE expert count
    kv_budget_first: bool = False  # the runbook image logged the KV budget before its error
    faults: list[str] = field(default_factory=list)  # the model's output behaviours (engine/behaviour.py)
    rank_faults: dict[str, dict] = field(default_factory=dict)  # behaviours of some ranks, with their args

    def set(self, **settings) -> None:
        for k, v in settings.items():
            if k not in {f.name for f in dataclasses.fields(self)}:
                raise StateError(f"sim server: no setting {k!r}")
            setattr(self, k, v)

    def behaviours(self) -> ServerFaults:
        return ServerFaults.from_server({"faults": self.faults, "rank_faults": self.rank_faults})


@dataclass
class Background(JsonState):
    """A process a fault leaves running on a node before the suite starts; ended at teardown."""
    node: str
    cmd: str
    env: dict[str, str] | None = None


@dataclass
class Rack(JsonState):
    created: float
    nodes: dict[str, Node]
    server: ServerState
    served_model: str = ""
    container: str = ""  # the sim's own container, image and ATOM tree (from the rack file)
    image: str = ""
    atom_path: str = ""
    faults: list[str] = field(default_factory=list)  # the fault specs applied
    rack_overrides: dict[str, Any] = field(default_factory=dict)  # rack-file settings by dotted key
    background: list[Background] = field(default_factory=list)


def healthy(nodes: int, gpus: int, accuracy: float) -> Rack:
    boot = time.time() - 3600
    out = Rack(created=time.time(), nodes={}, server=ServerState(accuracy=accuracy))
    for i in range(1, nodes + 1):
        out.nodes[f"node{i}"] = Node(
            index=i - 1, tray=i, data_ip=f"127.0.{i}.1", boot_time=boot,
            modules=["amdgpu", "ifoe", "amdxcp", "drm_buddy", "gpu_sched"], kfd=True,
            params={"gpu_recovery": "0", "halt_if_hws_hang": "1", "mtype_local": "0", "noretry": "1"},
            dmesg=[[0.0, "Linux version 6.8.0-60-generic (buildd@lcy02-amd64-098) #63-Ubuntu SMP"]],
            train_s=0.0,
            gpus=[Gpu(card=g, accel_state="active", accel_id=4 * (i - 1) + g, link_type="ualink",
                      ppod_id=HEALTHY_PPOD, vpod_id="2",
                      local_accels=" ".join(str(x) for x in reversed(range(gpus))),
                      station_lane_en_bitmap="0x0000ffff", hbm_gib=432)
                  for g in range(gpus)],
        )
    for ext in extensions("healthy"):
        ext(out, gpus)
    return out


def load_rack(rack_dir: Path) -> Rack:
    return Rack.from_json(load(rack_dir))


def save(rack_dir: Path, state: Rack | dict) -> None:
    nodeview.save(rack_dir, state.to_json() if isinstance(state, Rack) else state)
