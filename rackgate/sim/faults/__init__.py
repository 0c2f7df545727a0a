"""Named faults of the simulated rack. Each reproduces one catalogue row's real signature.

A fault is chosen as "name", "name@node" or "name@node:gpu"; without a target it hits its
default place. A fault is data: its name, its catalogue row, and what it changes (server
settings, named server behaviours, rank behaviours, edits to the launch and benchmark
commands, the launch environment, rack-file settings). Changes that need code (a node's files,
its kernel log) are a function `apply`. Area modules (plat, fab, srv, acc, bench, reg, survey)
declare their tables with `declare(...)` or `@fault(...)`; the fault matrix (rackgate/catalogue)
says which test ids each one must fail.
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ...config import load as load_rack
from .. import launch
from ..state import Rack


class FaultError(ValueError):
    pass


@dataclass(frozen=True)
class RankFault:
    """A behaviour of some DP ranks: `pick` chooses among the target node's ranks (a slice's
    start and stop; the whole node when None), `args` are the behaviour's parameters."""
    name: str
    pick: tuple[int, int] | None = None
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeFile:
    """A node file the sim shows because a fault changes it: its real path, its content on a
    healthy node and under the fault, each as the real system prints it (rendered on every node
    by rackgate/sim/areas/files.py; nothing else has to know the file)."""
    path: str
    healthy: str
    faulted: str

    def __post_init__(self) -> None:
        if not self.path.startswith("/") or "/../" in self.path + "/" or self.path.endswith("/"):
            raise FaultError(f"sim node file {self.path!r}: give the real absolute path of a file")


@dataclass(frozen=True)
class Fault:
    name: str
    row: str
    help: str
    target: str = "rack"  # "node", "gpu", "rack" or "server"
    default: str = ""  # default place: "node2", "node2:1", or ""
    apply: Callable[..., None] | None = None  # changes that need code: (state[, node[, gpu]])
    server: Mapping[str, Any] = field(default_factory=dict)  # settings of state["server"]
    behaviours: tuple[str, ...] = ()  # named server behaviours (state["server"]["faults"])
    rank: RankFault | None = None  # a behaviour of the target node's ranks
    launch: tuple = ()  # edits to the launch command (rackgate/sim/launch.py)
    bench: tuple = ()  # edits to the benchmark command
    env: Mapping[str, str | None] = field(default_factory=dict)  # launch environment (None removes)
    overrides: Mapping[str, Any] = field(default_factory=dict)  # rack-file settings, by dotted key
    files: tuple[NodeFile, ...] = ()  # node files: healthy on every node, faulted on the target node


FAULTS: dict[str, Fault] = {}


def declare(*faults: Fault) -> None:
    for f in faults:
        if f.name in FAULTS:
            raise FaultError(f"duplicate sim fault name {f.name!r}")
        FAULTS[f.name] = f


def fault(name: str, row: str, help: str, target: str = "rack", default: str = "", **changes):
    """Declare a fault whose changes need code (the decorated function); `changes` are its data."""
    def deco(fn):
        declare(Fault(name, row, help, target, default, apply=fn, **changes))
        return fn
    return deco


def _load_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


def get(name: str) -> Fault:
    if not FAULTS:
        _load_all()
    try:
        return FAULTS[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(FAULTS), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise FaultError(f"unknown sim fault {name!r}{hint}; see --sim-faults-list") from None


def all_faults() -> dict[str, Fault]:
    if not FAULTS:
        _load_all()
    return dict(FAULTS)


def node_ranks(state: Rack, node: str) -> list[int]:
    n = state.nodes[node]
    g = len(n.gpus)
    return list(range(n.index * g, (n.index + 1) * g))


def _edit(overrides: dict, key: str, base: str, edits: tuple) -> None:
    try:
        overrides[key] = str(launch.Command.parse(overrides.get(key, base)).apply(edits))
    except launch.EditError as e:
        raise FaultError(f"{key}: {e}") from None


def node_files() -> dict[str, str]:
    """Every node file a fault declares, with its healthy content (areas/files.py puts them on every node)."""
    out: dict[str, str] = {}
    for f in all_faults().values():
        for nf in f.files:
            if out.setdefault(nf.path, nf.healthy) != nf.healthy:
                raise FaultError(f"sim fault {f.name}: {nf.path} is declared healthy as {nf.healthy!r} "
                                 f"and as {out[nf.path]!r} by another fault")
    return out


def _apply_data(f: Fault, state: Rack, node: str) -> None:
    if f.files:
        if f.target not in ("node", "gpu"):
            raise FaultError(f"sim fault {f.name}: node files need a node target, not {f.target!r}")
        state.nodes[node].files.update({nf.path: nf.faulted for nf in f.files})
    server = state.server
    server.set(**f.server)
    server.faults += [b for b in f.behaviours if b not in server.faults]
    if f.rank is not None:
        ranks = node_ranks(state, node)
        if f.rank.pick is not None:
            ranks = ranks[slice(*f.rank.pick)]
        server.rank_faults[f.rank.name] = {"ranks": ranks, **f.rank.args}
    overrides = state.rack_overrides
    overrides.update(f.overrides)
    if f.launch:
        _edit(overrides, "launch.command", launch.SIM_LAUNCH, f.launch)
    if f.bench:
        _edit(overrides, "bench.command", launch.SIM_BENCH, f.bench)
    if f.env:
        env = dict(overrides.get("launch.env") or load_rack(launch.SHIPPED_RACK).launch.env)
        for k, v in f.env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        overrides["launch.env"] = env


def apply(state: Rack, spec: str) -> None:
    """Apply one fault spec to the sim state."""
    name, _, place = spec.partition("@")
    f = get(name.strip())
    place = place or f.default
    node, _, gpu = place.partition(":")
    where: tuple = ()
    if f.target in ("node", "gpu"):
        if node not in state.nodes:
            raise FaultError(f"sim fault {spec!r}: no node {node!r} (nodes: {', '.join(state.nodes)})")
        where = (node,)
        if f.target == "gpu":
            n = len(state.nodes[node].gpus)
            if not gpu.isdigit() or int(gpu) >= n:
                raise FaultError(f"sim fault {spec!r}: give a GPU index 0..{n - 1} as name@node:gpu")
            where = (node, int(gpu))
    _apply_data(f, state, node)
    if f.apply is not None:
        f.apply(state, *where)
