"""The rack file's [remediate] table: what `rackgate fleet --remediate` may do to this rack's
trays (docs/fleet.md). rackgate builds in no remediation: every command is the operator's."""
from __future__ import annotations

from pydantic import Field, model_validator

from .base import Section


class Remedy(Section):
    # Which findings this command answers: their rows ("PLAT-PARAMS") and/or their catalogue action
    # classes ("reboot-or-reload-driver"); a finding takes the first remedy that names it.
    rows: list[str] = Field(default_factory=list)
    action_classes: list[str] = Field(default_factory=list)
    # Run here with bash -c, its environment carrying RACKGATE_NODE (the rack's node name),
    # RACKGATE_HOST (its ssh host), RACKGATE_SLURM_NODE, RACKGATE_ROWS (space-separated) and
    # RACKGATE_RACK_FILE, e.g. "ssh $RACKGATE_HOST 'modprobe -r amdgpu && modprobe amdgpu'".
    command: str = Field(min_length=1)
    timeout_s: float = Field(default=900.0, gt=0)

    @model_validator(mode="after")
    def _names_something(self) -> Remedy:
        if not self.rows and not self.action_classes:
            raise ValueError("a remedy names the rows or action_classes it answers")
        return self


class Remediate(Section):
    # Rack node name -> Slurm node name, where they differ (default: the node's ssh host).
    slurm_nodes: dict[str, str] = Field(default_factory=dict)
    remedies: list[Remedy] = Field(default_factory=list)
    # A tray whose findings no remedy names waits this long for an operator's
    # `rackgate fleet --remediate --results DIR --mark-fixed NODE` (0: it stays drained; a later
    # loop picks the mark up).
    wait_fixed_s: float = Field(default=0.0, ge=0, le=7 * 86400)
