"""The driver's ualink view of a node's GPUs beside `amd-smi fabric`'s: FAB-UNPOPULATED's reading
(amd-smi's BANDWIDTH / LATENCY / VERSION per GPU, classified by rackgate/probes/amdsmi.py) and
FAB-ACCEL-ID's (the accel_id both show)."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CouldNotObserve
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


@dataclass(frozen=True)
class Numbered:
    """FAB-ACCEL-ID's reading of one node: every GPU's link (the driver's accel_id, GPU g at index
    g) and amd-smi fabric's view of the same GPUs, or why amd-smi could not be read (the driver's
    value may still show the fault)."""
    links: list[ualink.Link]
    smi: list[amdsmi.FabricGpu]
    smi_error: CouldNotObserve | None = None


def numbered(on: On) -> Numbered:
    """FAB-ACCEL-ID's probe: the node's ualink attributes (could not observe when the node does not
    show gpus_per_node cards), then `amd-smi fabric`; amd-smi missing, failing or printing nothing
    is kept as `smi_error`."""
    links = ualink.read_gpu_links(on.host, on.rack.gpus_per_node)
    try:
        res, gpus = amdsmi.fabric(on.host)
        res.require(tool="amd-smi")
    except CouldNotObserve as e:
        return Numbered(links, [], e)
    return Numbered(links, gpus)
