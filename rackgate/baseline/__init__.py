"""Facts a run observed, recorded as a baseline and compared after an image change.

A check records what it saw with facts.record(name, value, where=..., unit=..., row=...):
the KV budget per rank, GB/s per pair, a link's lane bitmap, the GSM8K score. Names follow
`area.thing[.unit]` (rackgate.config.fact_names, with the old names older baselines carry).
--record-baseline writes them with provenance (rack, image tag and id, ATOM commit, time);
recording again into the same file (same rack and image) merges: each numeric fact keeps
every run's sample, its value is their median, and the tolerance widens with their spread.
Later runs read them back (FAB-TRAINING compares link training with the healthy boot;
`pytest -m regression` and `rackgate compare` compare everything).
"""
from __future__ import annotations

import json
import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeGuard

from ..config.fact_names import canonical


@dataclass(frozen=True)
class Fact:
    name: str
    value: object
    where: str = ""
    unit: str = ""
    row: str = ""
    # The test that recorded it (pytest node id): `-m regression` runs these tests again.
    source: str = ""
    # Every recorded run's value when the baseline was recorded more than once (value: median).
    samples: list[float] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.name}@{self.where}" if self.where else self.name

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Fact":
        known = {f.name for f in fields(cls)}
        got = {k: v for k, v in raw.items() if k in known}
        got["name"], got["where"] = canonical(str(got.get("name", "")), str(got.get("where", "") or ""))
        if not isinstance(got.get("samples", []), list):
            raise TypeError(f"fact {got['name']}: samples is not a list")
        return cls(**got)

    @property
    def spread(self) -> float | None:
        """Robust standard deviation of the recorded samples (1.4826 x median absolute
        deviation; half the range for two); None with fewer than two numeric samples."""
        xs = [x for x in self.samples if _num(x)]
        if len(xs) < 2:
            return None
        if len(xs) == 2:
            return abs(xs[0] - xs[1]) / 2
        med = statistics.median(xs)
        return 1.4826 * statistics.median(abs(x - med) for x in xs)


def _num(v: object) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def merge_samples(old: Fact, new: Fact) -> Fact:
    """The same fact recorded again into a baseline: numbers keep every sample and take
    their median; anything else takes the newer value."""
    if not (_num(old.value) and _num(new.value)):
        return new
    samples = [*(old.samples or [old.value]), new.value]
    return replace(new, value=statistics.median(samples), samples=samples)


class Facts:
    """What this run observed (thread-safe: checks record from fan-out threads). `source` is the
    test running now (set by rackgate/hooks/baseline.py), stamped on every fact it records."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._facts: dict[str, Fact] = {}
        self._sets: dict[str, Any] = {}
        self.source = ""

    def record(self, name: str, value: int | float | str, where: str = "", unit: str = "", row: str = "") -> Fact:
        if not isinstance(value, (int, float, str)) or value != value:  # bool is an int; NaN != NaN
            raise TypeError(f"fact {name}: record a number, a string or a bool, not {value!r}")
        f = Fact(name, value, where, unit, row, self.source)
        with self._lock:
            self._facts[f.key] = f
        return f

    def keep(self, name: str, value: dict[str, Any]) -> None:
        """A recorded set that is more than one number (SRV-GOLDEN's golden set, `golden.KEY`):
        written into the baseline beside the facts, merged with an earlier recording of it."""
        with self._lock:
            self._sets[name] = value

    def sets(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._sets)

    def merge_sets(self, sets: dict[str, Any]) -> None:
        """Sets another process kept (an xdist worker)."""
        with self._lock:
            self._sets.update(sets)

    def merge(self, facts: list[Fact]) -> None:
        """Facts another process recorded (an xdist worker)."""
        with self._lock:
            for f in facts:
                self._facts[f.key] = f

    def all(self) -> list[Fact]:
        with self._lock:
            return sorted(self._facts.values(), key=lambda f: f.key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._facts)


# Provenance read from facts: provenance key -> the fact every node records.
PROVENANCE_FACTS = (("image", "platform.image.tag"), ("image_id", "platform.image.id"),
                    ("atom_commit", "platform.atom.commit"))
NODES_DIFFER = "(differs across nodes)"


def agreed(facts: list[Fact], name: str) -> tuple[str | None, dict[str, str]]:
    """(the value every `where` recorded for `name`, {}) when they agree; (NODES_DIFFER,
    {where: value}) when they do not; (None, {}) when none was recorded. A rack runs one image:
    nodes that disagree deserve their own line, not a joined value."""
    vals = {f.where: str(f.value) for f in facts if f.name == name}
    if not vals:
        return None, {}
    if len(set(vals.values())) == 1:
        return next(iter(vals.values())), {}
    return NODES_DIFFER, dict(sorted(vals.items()))


def provenance_from_facts(facts: list[Fact]) -> dict[str, Any]:
    """image, image_id, atom_commit as the nodes reported them (keys absent when not recorded),
    with `<key>_by_node` when the nodes disagree."""
    out: dict[str, Any] = {}
    for key, name in PROVENANCE_FACTS:
        one, per = agreed(facts, name)
        if one is not None:
            out[key] = one
        if per:
            out[f"{key}_by_node"] = per
    return out


@dataclass(frozen=True)
class Baseline:
    path: str
    provenance: dict[str, Any]
    facts: dict[str, Fact]
    sets: dict[str, Any] = field(default_factory=dict)  # recorded sets (golden.KEY: the golden set)

    def get(self, name: str, where: str = "") -> Fact | None:
        return self.facts.get(f"{name}@{where}" if where else name)

    def describe(self) -> str:
        p = self.provenance
        runs = p.get("runs", 1)
        return (f"{self.path} (rack {p.get('rack')}, image {p.get('image')}, recorded {p.get('time')}"
                + (f", median of {runs} runs" if runs and runs > 1 else "") + ")")


# Provenance that must agree for a second recording to merge into the first (else it replaces it).
SAME_BASELINE = ("rack", "image", "image_id")


def write(path: str | Path, facts: list[Fact], provenance: dict[str, Any], merge: bool = False,
          sets: dict[str, Any] | None = None) -> tuple[Path, str]:
    """Write the baseline; with merge, an existing baseline of the same rack and image takes
    these facts as one more run of samples, and these sets (the golden set) merged into its
    own. Returns (path, what was done, in words)."""
    from . import golden
    sets = dict(sets or {})
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    prov = {**provenance, "time": provenance.get("time") or time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": 1}
    by_key = {f.key: f for f in facts}
    how = "new baseline"
    old = load(p) if merge and p.exists() else None
    old_sets: dict[str, Any] = {}
    if old is not None:
        differ = [k for k in SAME_BASELINE if old.provenance.get(k) != provenance.get(k)]
        if differ:
            how = (f"replaced the baseline of another {'/'.join(differ)} "
                   f"({', '.join(f'{old.provenance.get(k)} -> {provenance.get(k)}' for k in differ)})")
        else:
            runs = int(old.provenance.get("runs", 1)) + 1
            merged = dict(old.facts)
            for k, f in by_key.items():
                merged[k] = merge_samples(old.facts[k], f) if k in old.facts else f
            by_key = merged
            old_sets = old.sets
            prov["runs"] = runs
            prov["first_time"] = old.provenance.get("first_time", old.provenance.get("time"))
            how = f"merged as run {runs} (value: median of the runs)"
    if golden.KEY in sets:
        sets[golden.KEY] = golden.merge(old_sets.get(golden.KEY), sets[golden.KEY])
    kept = {**old_sets, **sets}
    body: dict[str, Any] = {"provenance": prov, "facts": [_stored(f) for f in sorted(by_key.values(), key=lambda f: f.key)]}
    if kept:
        body["sets"] = kept
    # Atomic: a reader (or a crash) never sees half a baseline.
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    tmp.replace(p)
    return p, how


def _stored(f: Fact) -> dict[str, Any]:
    d = asdict(f)
    if not d["samples"]:
        del d["samples"]
    return d


class BaselineError(Exception):
    pass


def load(path: str | Path) -> Baseline | None:
    """The recorded baseline, or None when none was recorded."""
    p = Path(path)
    if not p.exists():
        return None
    try:
        body = json.loads(p.read_text())
        facts = {f.key: f for f in (Fact.from_dict(raw) for raw in body["facts"])}
        sets = body.get("sets", {})
        if not isinstance(sets, dict):
            raise TypeError("sets is not an object")
        return Baseline(str(p), body.get("provenance", {}), facts, sets)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        why = f"no {e.args[0]!r} entry" if isinstance(e, KeyError) else str(e)
        raise BaselineError(f"baseline {p}: not a rackgate baseline ({why})") from None
