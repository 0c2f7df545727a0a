"""Named faults of the simulated rack. Each reproduces one catalogue row's real signature.

A fault is chosen as "name", "name@node" or "name@node:gpu"; without a target it hits its
default place. Area modules (plat, fab, srv, acc) register faults with @fault; the fault
matrix (rackgate/catalogue) says which test ids each one must fail.
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable


class FaultError(ValueError):
    pass


@dataclass(frozen=True)
class Fault:
    name: str
    row: str
    help: str
    target: str  # "node", "gpu", "rack" or "server"
    default: str  # default place: "node2", "node2:1", or ""
    apply: Callable[..., None]


FAULTS: dict[str, Fault] = {}


def fault(name: str, row: str, help: str, target: str = "rack", default: str = ""):
    def deco(fn):
        if name in FAULTS:
            raise FaultError(f"duplicate sim fault name {name!r}")
        FAULTS[name] = Fault(name, row, help, target, default, fn)
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


def apply(state: dict, spec: str) -> None:
    """Apply one fault spec to the sim state."""
    name, _, place = spec.partition("@")
    f = get(name.strip())
    place = place or f.default
    node, _, gpu = place.partition(":")
    if f.target in ("node", "gpu"):
        if node not in state["nodes"]:
            raise FaultError(f"sim fault {spec!r}: no node {node!r} (nodes: {', '.join(state['nodes'])})")
        if f.target == "gpu":
            n = len(state["nodes"][node]["gpus"])
            if not gpu.isdigit() or int(gpu) >= n:
                raise FaultError(f"sim fault {spec!r}: give a GPU index 0..{n - 1} as name@node:gpu")
            f.apply(state, node, int(gpu))
        else:
            f.apply(state, node)
    else:
        f.apply(state)
