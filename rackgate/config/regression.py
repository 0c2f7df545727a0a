"""Expectations for `pytest -m regression`: how far each recorded fact may move from the baseline.

A fact is matched by name against the patterns of [regression.facts] (shell-style, e.g.
"fabric.bw.*"); the longest matching pattern wins, else [regression.default]. A numeric fact
fails when it moves in the checked direction by more than BOTH its relative and its absolute
allowance (either left out counts as 0, i.e. no allowance); any other fact must be equal.
"""
from __future__ import annotations

import fnmatch
from typing import Literal

from pydantic import Field, model_validator

from .base import Section


class Tolerance(Section):
    # Which move is a regression: "drop" (bandwidth, KV, accuracy), "rise" (latency, cold start),
    # "both" (either way), "equal" (must not change at all), "report" (shown, never a failure:
    # the image tag, which an image change changes by definition).
    direction: Literal["drop", "rise", "both", "equal", "report"] = "both"
    # Allowed move relative to the baseline value (0.10 = 10%).
    rel: float = Field(default=0.0, ge=0)
    # Allowed move in the fact's own unit (0.01 = one point of accuracy as a fraction).
    abs: float = Field(default=0.0, ge=0)

    def describe(self) -> str:
        if self.direction == "equal":
            return "must be equal"
        if self.direction == "report":
            return "reported only"
        parts = [f"{self.rel:.0%}" if self.rel else "", f"±{self.abs:g}" if self.abs else ""]
        allow = " / ".join(p for p in parts if p) or "no change"
        return {"drop": f"may drop {allow}", "rise": f"may rise {allow}", "both": f"may move {allow}"}[self.direction]


def _defaults() -> dict[str, Tolerance]:
    return {
        # FAB-BW: ubench07 GB/s per pair and direction; run-to-run noise is a few percent.
        "fabric.bw.*": Tolerance(direction="drop", rel=0.10),
        # SRV-KV: available_for_kv per rank is arithmetic on the image's memory use: any real drop
        # means fewer concurrent sequences.
        "*available_for_kv*": Tolerance(direction="drop", rel=0.02),
        # ACC: GSM8K strict-match; the validated 0.9621 has a standard error of 0.0053.
        "*gsm8k*": Tolerance(direction="drop", abs=0.015),
        # Latency-like facts may not grow by more than 15%; a cold start (under 6 min) by 25%.
        "*ttft*": Tolerance(direction="rise", rel=0.15),
        "*tpot*": Tolerance(direction="rise", rel=0.15),
        "*cold_start*": Tolerance(direction="rise", rel=0.25),
        # What the image is: it changes with the image by definition; shown, never judged.
        "image": Tolerance(direction="report"),
        "image_id": Tolerance(direction="report"),
        # Hardware inventory and patch sizes must not move at all.
        "hbm_gib": Tolerance(direction="equal"),
        "gpu_count": Tolerance(direction="equal"),
        "patch_bytes": Tolerance(direction="equal"),
    }


class RegressionExpect(Section):
    # Per fact-name pattern tolerances; the rack file's entries are added to (and override) these.
    facts: dict[str, Tolerance] = Field(default_factory=_defaults)
    # Facts no pattern matches: numbers may move 5% either way, anything else must be equal.
    default: Tolerance = Field(default_factory=lambda: Tolerance(direction="both", rel=0.05))

    @model_validator(mode="before")
    @classmethod
    def _merge_defaults(cls, data):
        # A rack file that tunes one pattern keeps the secure defaults for the others.
        if isinstance(data, dict) and isinstance(data.get("facts"), dict):
            data = {**data, "facts": {**{k: v.model_dump() for k, v in _defaults().items()}, **data["facts"]}}
        return data

    def for_fact(self, name: str) -> tuple[str, Tolerance]:
        """(pattern, tolerance) for a fact name; pattern "" means the default."""
        hits = [p for p in self.facts if fnmatch.fnmatchcase(name, p)]
        if not hits:
            return "", self.default
        best = max(hits, key=len)
        return best, self.facts[best]
