"""Turn sim state into per-node roots with the real sysfs paths, and executables on PATH."""
from __future__ import annotations

import functools
import importlib
import os
import pkgutil
import shutil
import stat
import sys
from pathlib import Path

import rackgate

from . import areas, drm, nodeview
from . import tools as sim_tools

PKG_ROOT = str(Path(rackgate.__file__).resolve().parent.parent)


def _write(path: Path, text: str) -> None:
    """A node file as sysfs shows it: never empty or half-written to a reader. The link-training
    agent re-renders a node while the suite reads it; written in place (truncate, then write), a
    reader saw `mtype_local` empty in a survey run under load. So an unchanged file is left alone
    and a changed one is replaced whole (a reader sees the old text or the new), as
    areas/plat.py's _sync does."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".rg-tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@functools.cache
def tools() -> dict[str, str]:
    """Executables each node gets: real name -> module under rackgate.sim.tools. A tool module
    declares the name it is installed under as EXE (default: the module name)."""
    out = {}
    for m in pkgutil.iter_modules(sim_tools.__path__):
        mod = importlib.import_module(f"{sim_tools.__name__}.{m.name}")
        out[getattr(mod, "EXE", m.name)] = m.name
    return out


def extensions(kind: str) -> list:
    """Area hooks in rackgate/sim/areas/*.py: `healthy(state, gpus)` adds an area's healthy facts
    to a new state (a rackgate.sim.state.Rack); `render(rack_dir, name, node)` writes its files
    into a node's root (node: a rackgate.sim.state.Node)."""
    found = []
    for m in sorted(pkgutil.iter_modules(areas.__path__), key=lambda m: m.name):
        fn = getattr(importlib.import_module(f"{areas.__name__}.{m.name}"), kind, None)
        if fn is not None:
            found.append(fn)
    return found


def node_root(rack_dir: Path, name: str) -> Path:
    return rack_dir / name / "root"


def render_node(rack_dir: Path, name: str, node) -> None:
    """Write a node's files (node: rackgate.sim.state.Node) into its root."""
    root = node_root(rack_dir, name)
    drm.render(root, node)  # the cards' links first: everything below writes through them
    if "amdgpu" in node.modules:  # /sys/module/amdgpu exists only while the driver is loaded
        for p, v in node.params.items():
            _write(root / f"sys/module/amdgpu/parameters/{p}", f"{v}\n")
    else:
        shutil.rmtree(root / "sys/module/amdgpu", ignore_errors=True)
    kfd = root / "dev/kfd"
    if node.kfd:
        _write(kfd, "")
    elif kfd.exists():
        kfd.unlink()
    for gpu in node.gpus if "amdgpu" in node.modules else ():
        ual = root / drm.card_dir(node, gpu.card) / "device/ualink"
        # A GPU that is still training (or stuck) reads like the runbook's stuck boot.
        training = gpu.stuck or node.train_s > 0
        values = {
            "accel_state": "unconfigured" if training else gpu.accel_state,
            "accel_id": "4294967295" if training else str(gpu.accel_id),
            "link_type": "invalid" if training else gpu.link_type,
            "ppod_id": "00000000-0000-0000-0000-000000000000" if training else gpu.ppod_id,  # %pU
            "vpod_id": "0" if training else gpu.vpod_id,
            "local_accels": gpu.local_accels,
            "station_lane_en_bitmap": gpu.station_lane_en_bitmap,
        }
        for attr, v in values.items():
            _write(ual / attr, f"{v}\n")
    for ext in extensions("render"):
        ext(rack_dir, name, node)
    nodeview.write_kmsg(rack_dir / name, {"dmesg": node.dmesg})  # what the node's `dmesg` prints
    bindir = rack_dir / name / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for exe, mod in tools().items():
        p = bindir / exe
        # A tool's `front(node_dir)`: shell lines that answer some calls before any interpreter
        # starts (docker's exec). -S: the tools need only the standard library and rackgate (on
        # PYTHONPATH); skipping site-packages halves each call's start-up, and a suite run makes
        # hundreds of them.
        front = getattr(importlib.import_module(f"{sim_tools.__name__}.{mod}"), "front", None)
        p.write_text("#!/bin/sh\n" + (front(rack_dir / name) if front else "")
                     + f"exec {sys.executable} -S -m rackgate.sim.tools.{mod} \"$@\"\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def node_env(rack_dir: Path, name: str) -> dict[str, str]:
    # rackgate/sim/nccl: the sim's NCCL behaviour for torch.distributed (a sitecustomize, inert
    # unless torch.distributed is imported on a sim node).
    nccl = str(Path(__file__).resolve().parent / "nccl")
    pypath = os.pathsep.join(filter(None, [nccl, PKG_ROOT, os.environ.get("PYTHONPATH", "")]))
    return {
        "PATH": f"{rack_dir / name / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": pypath,
        "RACKGATE_SIM_NODE": str(rack_dir / name),
    }
