"""Expectations for the FAB rows (the fabric between nodes)."""
from pydantic import Field

from .base import Section


class FabricExpect(Section):
    # FAB-STATE: states that count as trained (firmware says ACTIVE where older docs say READY).
    active_states: list[str] = Field(default_factory=lambda: ["active", "ACTIVE", "READY"])
    # FAB-STATE: how long training may take before 'unconfigured' means stuck, and the poll step.
    state_wait_s: float = Field(default=60.0, gt=0)
    state_poll_s: float = Field(default=2.0, gt=0)
