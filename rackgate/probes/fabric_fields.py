"""FAB-UNPOPULATED's reading of one node: `amd-smi fabric` (its BANDWIDTH / LATENCY / VERSION per
GPU, classified by rackgate/probes/amdsmi.py) beside the driver's ualink view of the same GPUs."""
from __future__ import annotations

from dataclasses import dataclass

from . import amdsmi, ualink
from .target import On


@dataclass(frozen=True)
class Fields:
    node: str
    smi_shown: str  # the amd-smi command, where it ran and what it printed
    gpus: list[amdsmi.FabricGpu]
    links: dict[int, ualink.Link]  # by GPU index (amd-smi's gpu)


def fields(on: On) -> Fields:
    """amd-smi fabric (could not observe when it is missing, failed or printed nothing), then every
    GPU's ualink attributes."""
    res, gpus = amdsmi.fabric(on.host)
    res.require(tool="amd-smi")
    links = ualink.read_gpu_links(on.host, on.rack.gpus_per_node)
    return Fields(on.node, res.evidence(), gpus, dict(enumerate(links)))  # GPU g at index g
