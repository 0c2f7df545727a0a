"""Expectations for the PLAT rows (one node, before anything else)."""
from pydantic import Field

from .base import Section


class PlatformExpect(Section):
    # PLAT-PARAMS: the bring-up module parameters (perf_setup menu D).
    amdgpu_params: dict[str, str] = Field(default_factory=lambda: {
        "gpu_recovery": "0", "halt_if_hws_hang": "1", "mtype_local": "0", "noretry": "1"})
    # PLAT-GPUS: HBM per GPU in GiB (288 or 432 boards); None = only require all equal.
    hbm_gib: float | None = None
