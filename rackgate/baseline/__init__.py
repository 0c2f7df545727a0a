"""Facts a run observed, recorded as a baseline and compared after an image change.

A check records what it saw with facts.record(name, value, where=..., unit=..., row=...):
the KV budget per rank, GB/s per pair, a link's lane bitmap, the GSM8K score. --record-baseline
writes them with provenance (rack, image, time); later runs read them back (FAB-TRAINING
compares link training with the healthy boot; `pytest -m regression` compares everything).
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Fact:
    name: str
    value: object
    where: str = ""
    unit: str = ""
    row: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}@{self.where}" if self.where else self.name


class Facts:
    """What this run observed (thread-safe: checks record from fan-out threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._facts: dict[str, Fact] = {}

    def record(self, name: str, value, where: str = "", unit: str = "", row: str = "") -> Fact:
        f = Fact(name, value, where, unit, row)
        with self._lock:
            self._facts[f.key] = f
        return f

    def all(self) -> list[Fact]:
        with self._lock:
            return list(self._facts.values())


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
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(body, indent=1))
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
        facts = {f.key: f for f in (Fact(**raw) for raw in body["facts"])}
        return Baseline(str(p), body.get("provenance", {}), facts)
    except (ValueError, KeyError, TypeError) as e:
        raise BaselineError(f"baseline {p}: not a rackgate baseline ({e})") from None
