"""The product's one way into the simulated rack (rackgate/sim/, a test double): the shipped sim
rack file, the sim's fault names, and building the sim for a rack file with a [sim] table.

The sim is imported here only, inside these functions (never at import time), so a run against a
real rack never loads it. pyproject.toml's `product-without-sim` contract holds every other module
of the product to that (it names them all as its sources; this one is the module it leaves out).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Rack
    from .sim.rack import SimRack


class FaultError(ValueError):
    """A --sim-fault the sim does not know, or one that does not apply (one line)."""


def shipped_rack() -> Path:
    """racks/sim.toml: the rack file of the simulated rack (the suite's default)."""
    from .sim.launch import SHIPPED_RACK
    path: Path = SHIPPED_RACK  # the sim is not type-checked (pyproject.toml [tool.mypy])
    return path


def rank_nodes() -> dict[int, str]:
    """The shipped sim rack's DP ranks -> node, as the sim names and orders its nodes (node i's
    ranks are i*gpus_per_node onwards, as launched)."""
    from .config import load
    from .sim.state import healthy
    rack = load(shipped_rack())
    sim, g = rack.sim, rack.gpus_per_node
    nodes = healthy(sim.nodes if sim else 4, g, sim.accuracy if sim else 0.96).nodes
    return {n.index * g + k: name for name, n in nodes.items() for k in range(g)}


def node_names() -> list[str]:
    """The shipped sim rack's nodes, as the sim names them (node1, node2, ...)."""
    from .config import load
    from .sim import state
    rack = load(shipped_rack())
    assert rack.sim is not None  # the shipped rack is the sim's
    return list(state.healthy(rack.sim.nodes, rack.gpus_per_node, rack.sim.accuracy).nodes)


def check_faults(specs: list[str]) -> None:
    """Every NAME of the NAME[@NODE[:GPU]] specs is a fault of the sim; FaultError otherwise."""
    if not specs:
        return  # a real rack: the sim stays unloaded
    from .sim import faults
    for spec in specs:
        try:
            faults.get(spec.partition("@")[0])
        except faults.FaultError as e:
            raise FaultError(str(e)) from None


def all_faults() -> dict[str, Any]:
    """The sim's faults by name (rackgate/sim/faults: name, row, help, target, default, ...)."""
    from .sim import faults
    got: dict[str, Any] = faults.all_faults()
    return got


def fault_lines() -> list[str]:
    """The sim's faults, one line each (name, row, what it does, its default target), by row."""
    from .sim import faults
    out: list[str] = []
    for f in sorted(faults.all_faults().values(), key=lambda f: (f.row, f.name)):
        where = f"  (default @{f.default})" if f.default else ""
        out.append(f"{f.name:<24} {f.row:<18} {f.help}{where}")
    return out


def build(rack: Rack, faults: list[str], workdir: str | None = None) -> SimRack:
    """The sim laid out for `rack` (a rack file with a [sim] table) with these faults, its nodes'
    agents started; its .rack is the rack with its nodes, .stop() ends it. FaultError for a fault
    the sim does not know or cannot apply."""
    from .sim import faults as sim_faults
    from .sim.rack import build as build_sim
    try:
        return build_sim(rack, faults, workdir=workdir)
    except sim_faults.FaultError as e:
        raise FaultError(str(e)) from None
