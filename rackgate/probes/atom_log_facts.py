"""The facts ATOM's log lines give, as types (parsed by rackgate/atom/logfacts.py, judged by
rackgate/gates/serverlogs.py): the `Memory budget:` figures, the KV budget error, and a value of
the `Engine kwargs:` repr that is not a Python literal."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryBudget:
    total_gpu: float | None
    utilization: float | None
    budget: float | None
    peak_torch: float | None
    cudagraph_est: float | None
    available_for_kv: float
    num_kvcache_blocks: int | None
    line: str


@dataclass(frozen=True)
class KvError:
    reserved_gb: float
    slots: int
    available_gb: float
    utilization: float | None
    line: str = ""


class Unparsed(str):
    """A value of the kwargs repr that is not a Python literal (an object's repr), kept as text."""

    def __repr__(self) -> str:
        return f"Unparsed({str(self)!r})"
