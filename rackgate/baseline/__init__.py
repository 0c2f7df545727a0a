"""Facts a run observed, recorded as a baseline and compared after an image change.

A check records what it saw with facts.record(name, value, where=..., unit=..., row=...):
the KV budget per rank, GB/s per pair, a link's lane bitmap, the GSM8K score. --record-baseline
writes them with provenance (rack, image, time); later runs read them back (FAB-TRAINING
compares link training with the healthy boot; `pytest -m regression` compares everything).
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path


@dataclass(frozen=True)
class Fact:
    name: str
    value: object
    where: str = ""
    unit: str = ""
    row: str = ""
    # The test that recorded it (pytest node id): `-m regression` runs these tests again.
    source: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}@{self.where}" if self.where else self.name

    @classmethod
    def from_dict(cls, raw: dict) -> "Fact":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


class Facts:
    """What this run observed (thread-safe: checks record from fan-out threads). `source` is the
    test running now (set by fixtures/baseline.py), stamped on every fact it records."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._facts: dict[str, Fact] = {}
        self.source = ""

    def record(self, name: str, value, where: str = "", unit: str = "", row: str = "") -> Fact:
        if not isinstance(value, (int, float, str)) or value != value:  # bool is an int; NaN != NaN
            raise TypeError(f"fact {name}: record a number, a string or a bool, not {value!r}")
        f = Fact(name, value, where, unit, row, self.source)
        with self._lock:
            self._facts[f.key] = f
        return f

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


@dataclass(frozen=True)
class Baseline:
    path: str
    provenance: dict
    facts: dict[str, Fact]

    def get(self, name: str, where: str = "") -> Fact | None:
        return self.facts.get(f"{name}@{where}" if where else name)

    def describe(self) -> str:
        p = self.provenance
        return f"{self.path} (rack {p.get('rack')}, image {p.get('image')}, recorded {p.get('time')})"


def write(path: str | Path, facts: list[Fact], provenance: dict) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    body = {"provenance": {**provenance, "time": provenance.get("time") or time.strftime("%Y-%m-%dT%H:%M:%S%z")},
            "facts": [asdict(f) for f in sorted(facts, key=lambda f: f.key)]}
    # Atomic: a reader (or a crash) never sees half a baseline.
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    tmp.replace(p)
    return p


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
        return Baseline(str(p), body.get("provenance", {}), facts)
    except (ValueError, KeyError, TypeError) as e:
        raise BaselineError(f"baseline {p}: not a rackgate baseline ({e})") from None
