"""Expectations for `pytest -m regression` and `rackgate compare`: how far each recorded fact
may move from the baseline.

Tolerances are keyed by the EXACT fact name (rackgate.config.fact_names: `area.thing[.unit]`;
an old name in a rack file is read as its current one). Each has a direction:
  higher  higher is better: a drop beyond the allowance is a regression (bandwidth, KV, accuracy)
  lower   lower is better: a rise beyond the allowance is a regression (latency, cold start)
  both    either move beyond the allowance is a regression
  equal   must not change at all (configuration: engine kwargs, inventory, patch sizes, ids)
  report  shown, never judged (the image tag and id: an image change changes them by definition)
("drop" and "rise", the older spellings, mean higher and lower.)
The allowance of a numeric fact is the largest of: `rel` x the baseline value, `abs` (in the
fact's unit), and `noise` x the spread of the baseline's repeated samples (when the baseline
was recorded more than once: rackgate.baseline.Fact.spread). A fact no entry names: numbers may
move 5% either way, anything else must be equal ([regression.default]).
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import Section
from .fact_names import canonical

_SYNONYMS = {"drop": "higher", "rise": "lower"}
Direction = Literal["higher", "lower", "both", "equal", "report", "drop", "rise"]


class Tolerance(Section):
    direction: Direction = "both"
    # Allowed move relative to the baseline value (0.10 = 10%).
    rel: float = Field(default=0.0, ge=0)
    # Allowed move in the fact's own unit (0.01 = one point of accuracy as a fraction).
    abs: float = Field(default=0.0, ge=0)
    # Allowed move in robust standard deviations of the baseline's repeated samples (0: none).
    noise: float = Field(default=0.0, ge=0)

    @field_validator("direction", mode="before")
    @classmethod
    def _spelling(cls, v: object) -> object:
        return _SYNONYMS.get(v, v) if isinstance(v, str) else v

    def allowance(self, old: float, spread: float | None) -> float:
        return max(self.rel * abs(old), self.abs, self.noise * spread if spread else 0.0)

    def describe(self, spread: float | None = None) -> str:
        if self.direction == "equal":
            return "must be equal"
        if self.direction == "report":
            return "reported only"
        parts = [f"{self.rel:.0%}" if self.rel else "", f"±{self.abs:g}" if self.abs else "",
                 f"{self.noise:g}σ={self.noise * spread:.3g}" if self.noise and spread else ""]
        allow = " / ".join(p for p in parts if p) or "no change"
        return {"higher": f"may drop {allow}", "lower": f"may rise {allow}", "both": f"may move {allow}"}[self.direction]


def _t(direction: Direction, rel: float = 0.0, abs: float = 0.0, noise: float = 0.0) -> Tolerance:
    return Tolerance(direction=direction, rel=rel, abs=abs, noise=noise)


def _defaults() -> dict[str, Tolerance]:
    return {
        # What the image is: changes with the image by definition; shown, never judged.
        "platform.image.tag": _t("report"),
        "platform.image.id": _t("report"),
        # The ATOM commit the image's checkout is at: the engine code itself; must be equal.
        "platform.atom.commit": _t("equal"),
        # Inventory, patch sizes, link identity and training: configuration, must be equal.
        "platform.gpu.count": _t("equal"),
        "platform.gpu.hbm_gib": _t("equal"),
        "platform.patch.size_bytes": _t("equal"),
        "ualink.accel_id": _t("equal"),
        "ualink.local_accels": _t("equal"),
        "ualink.station_lane_en_bitmap": _t("equal"),
        # The engine kwargs the server really ran with (one fact per kwarg) and the code-object
        # translation counts on A0: what the image configures, not what it measures.
        "serving.engine.kwarg": _t("equal"),
        "serving.translation.installed": _t("equal"),
        "serving.translation.translated": _t("equal"),
        "serving.translation.reused": _t("equal"),
        # available_for_kv per rank and its block count: arithmetic on the image's memory use,
        # reproducible to the MB; any real drop means fewer concurrent sequences.
        "serving.kv.available_gb": _t("higher", rel=0.02),
        "serving.kv.blocks": _t("higher", rel=0.02),
        # Cold start to ready: ~6 min on the rack, tens of seconds of jitter (weights from disk).
        "serving.cold_start_s": _t("lower", rel=0.25, abs=30.0, noise=3.0),
        # Measured under load: relative band, widened by the baseline's own spread.
        "fabric.ubench07.read_gbps": _t("higher", rel=0.10, noise=3.0),
        "fabric.ubench07.write_gbps": _t("higher", rel=0.10, noise=3.0),
        "fabric.ubench07.bidir_gbps": _t("higher", rel=0.10, noise=3.0),
        # all_reduce bus bandwidth per node and world: timed over a few iterations, noisier than ubench07.
        "fabric.collective.busbw_gbps": _t("higher", rel=0.25, noise=3.0),
        "bench.tok_s_per_gpu": _t("higher", rel=0.15, noise=3.0),
        "bench.ttft_ms": _t("lower", rel=0.25, noise=3.0),
        "bench.tpot_ms": _t("lower", rel=0.25, noise=3.0),
        # GSM8K strict-match: the full 1319 questions have a standard error of ~0.0053 at 0.96;
        # the quick gate stops after ~100-300 questions (standard error ~0.01-0.02).
        "accuracy.gsm8k.full": _t("higher", abs=0.015, noise=3.0),
        "accuracy.gsm8k.quick": _t("higher", abs=0.03, noise=3.0),
        # Output tokens per answer on the quick gate's questions (MLPerf TEST09: the mean output
        # length within a band of the reference): greedy answers to the same questions in the
        # same order; a shift means the image answers differently (shorter working, earlier EOS).
        # The per-question counts are kept (reported) to draw both distributions.
        "accuracy.output_tokens.mean": _t("both", rel=0.10, noise=3.0),
        "accuracy.output_tokens.stdev": _t("both", rel=0.25, noise=3.0),
        "accuracy.output_tokens.per_question": _t("report"),
        # Correctable ECC errors one GPU added during the fabric / serving stages (FAB-ERRORS,
        # SRV-HW-ERRORS): HBM corrects a few bits now and then; a rate that climbs after an image
        # change (a hotter board, a memory clock) is a finding. Retired pages never go back.
        "hw.ecc_ce.fabric": _t("lower", rel=1.0, abs=10.0),
        "hw.ecc_ce.server_boot": _t("lower", rel=1.0, abs=10.0),
        # Correctable PCIe AER errors (TOTAL_ERR_COR) one GPU added in the same stages: below the
        # storm rate (platform.aer_storm_per_min) never a finding, but a link that starts retrying
        # more after a change is.
        "hw.aer_cor.fabric": _t("lower", rel=1.0, abs=10.0),
        "hw.aer_cor.server_boot": _t("lower", rel=1.0, abs=10.0),
        "platform.ras.bad_pages": _t("lower"),
    }


class RegressionExpect(Section):
    # Per fact-name tolerances; the rack file's entries are added to (and override) these.
    facts: dict[str, Tolerance] = Field(default_factory=_defaults)
    # Facts no entry names: numbers may move 5% either way, anything else must be equal.
    default: Tolerance = Field(default_factory=lambda: Tolerance(direction="both", rel=0.05))

    @model_validator(mode="before")
    @classmethod
    def _merge_defaults(cls, data: Any) -> Any:
        # A rack file that tunes one fact keeps the defaults for the others; old names still work.
        if isinstance(data, dict) and isinstance(data.get("facts"), dict):
            mine = {canonical(k)[0]: v for k, v in data["facts"].items()}
            data = {**data, "facts": {**{k: v.model_dump() for k, v in _defaults().items()}, **mine}}
        return data

    def for_fact(self, name: str) -> tuple[str, Tolerance]:
        """(name, tolerance) for a fact name; "" means the default."""
        name = canonical(name)[0]
        if name in self.facts:
            return name, self.facts[name]
        return "", self.default
