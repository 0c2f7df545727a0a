"""Kernel modules (lsmod) and the amdgpu driver's device node and parameters."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..access import NodeAccess
from .target import On

AMDGPU_PARAMS = ("gpu_recovery", "halt_if_hws_hang", "mtype_local", "noretry")


def parse_lsmod(text: str) -> dict[str, int]:
    """lsmod output -> {module: size}. The header line ('Module Size Used by') is skipped."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] != "Module" and parts[1].isdecimal():
            out[parts[0]] = int(parts[1])
    return out


@dataclass(frozen=True)
class DriverFacts:
    modules: dict[str, int]
    kfd: bool
    lsmod_text: str

    @property
    def amdgpu(self) -> bool:
        return "amdgpu" in self.modules


def driver(host: NodeAccess) -> DriverFacts:
    res = host.run(["lsmod"], timeout=30).require(tool="lsmod")
    if not res.stdout.lstrip().startswith("Module"):
        from ..errors import UnrecognisedOutput
        raise UnrecognisedOutput(f"node {host.name}: lsmod printed no 'Module Size Used by' header: "
                                 f"{res.stdout.strip()[:120]!r}")
    return DriverFacts(parse_lsmod(res.stdout), host.exists("/dev/kfd"), res.stdout)


def amdgpu_params(host: NodeAccess, names: Sequence[str] = AMDGPU_PARAMS) -> dict[str, str | None]:
    """Loaded values of amdgpu's module parameters (None: the file is missing)."""
    paths = {n: f"/sys/module/amdgpu/parameters/{n}" for n in names}
    raw = host.read_many(list(paths.values()))
    out = {n: (None if (v := raw[p]) is None else v.strip()) for n, p in paths.items()}
    empty = [paths[n] for n, v in out.items() if v == ""]
    if empty:
        from ..errors import UnrecognisedOutput
        raise UnrecognisedOutput(f"node {host.name}: {empty[0]} is empty (a loaded parameter always has a value)")
    return out


def loaded(on: On) -> DriverFacts:
    """PLAT-DRIVER's and PLAT-IFOE's probe: the node's lsmod and /dev/kfd."""
    return driver(on.host)


def params(on: On) -> dict[str, str | None]:
    """PLAT-PARAMS' probe: the loaded values of the amdgpu parameters the rack file names."""
    return amdgpu_params(on.host, tuple(on.rack.platform.amdgpu_params))
