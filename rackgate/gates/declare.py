"""A check, declared once: its catalogue row, what one item covers, its probe, its judge and the
evidence it attaches. Declarations sit next to their judges (`rackgate/gates/<area>.py`, a
`declare(Check(...))` after the judge); one generic pytest module (rackgate/checks/test_declared.py) makes
the items, the fault matrix derives a fault's default case from them (rackgate/faultmatrix.py) and
docs/catalogue.md names each row's probe and judge.

    declare(Check("PLAT-SHM", "node", probe=shm.stale, judge=shm_segments, shows=shm_shown))

- probe: `(On) -> facts` (rackgate/probes/target.py: the node's Host, its container, the rack
  file); it reads, parses and raises CouldNotObserve when it cannot look; it never judges.
- judge: `(facts, rack, where) -> findings`: pure; an empty list is healthy. It reads the rack
  file's expectations from `rack`; `where` names the node/GPU in a could-not-observe it raises.
- shows: `(facts, rack) -> [Shown]`: the evidence every item attaches, pass or fail.
- facts: `(facts, where) -> [Fact]` (optional): what `-m regression` compares; `where` is the
  item's key (node2, node2/card3).
- applies: `(rack) -> reason` (optional): non-empty when the rack file says the check does not
  apply (the item is SKIPPED with that reason).

The item's name is the row's (`test_plat_shm[node2]`, `test_<row>[node2-card3]` per GPU): one
declaration per row.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Generic, Literal, Sequence, TypeVar

from ..config.model import Rack
from ..probes.target import On

F = TypeVar("F")
Per = Literal["node", "gpu"]
# The one pytest module that makes the declared checks' items (the fault matrix names its ids).
ITEMS_MODULE = "rackgate/checks/test_declared.py"


class DeclarationError(ValueError):
    pass


@dataclass(frozen=True)
class Shown:
    """One piece of evidence: a name and the text seen (kind "json" for JSON)."""
    name: str
    text: str
    kind: str = "text"


@dataclass(frozen=True)
class Fact:
    """A fact the item records (`-m regression`); `where` defaults to the item's key."""
    name: str
    value: int | float | str | bool
    unit: str = ""
    where: str = ""


@dataclass(frozen=True)
class Check(Generic[F]):
    row: str
    per: Per
    probe: Callable[[On], F]
    judge: Callable[[F, Rack, str], list[str]]
    shows: Callable[[F, Rack], Sequence[Shown]]
    facts: Callable[[F, str], Sequence[Fact]] | None = None
    applies: Callable[[Rack], str] | None = None

    @property
    def test_name(self) -> str:
        """The pytest item's name: test_plat_shm for PLAT-SHM."""
        return "test_" + self.row.lower().replace("-", "_")

    def item_id(self, node: str, gpu: int | None = None) -> str:
        """The item's test id at a node (or one GPU of it): rackgate/checks/test_declared.py::test_plat_shm[node2]."""
        param = node if self.per == "node" else f"{node}-card{gpu if gpu is not None else 0}"
        return f"{ITEMS_MODULE}::{self.test_name}[{param}]"


_CHECKS: dict[str, Check[Any]] = {}  # facts differ per check


def declare(*checks: Check[Any]) -> None:
    for c in checks:
        if c.row in _CHECKS:
            raise DeclarationError(f"row {c.row} is declared twice ({_where(_CHECKS[c.row])}, {_where(c)})")
        if c.per not in ("node", "gpu"):
            raise DeclarationError(f"row {c.row}: per must be 'node' or 'gpu', not {c.per!r}")
        _CHECKS[c.row] = c


def _where(c: Check[Any]) -> str:
    return getattr(c.judge, "__module__", "?")


def declared() -> dict[str, Check[Any]]:
    """Every declared check by row id (the modules of rackgate/gates/ declare theirs on import)."""
    from .. import gates
    for mod in pkgutil.iter_modules(gates.__path__):
        importlib.import_module(f"{gates.__name__}.{mod.name}")
    return dict(_CHECKS)


def qualname(fn: Callable[..., object]) -> str:
    """`probes.shm.stale`: a probe's or judge's name as docs/catalogue.md shows it."""
    mod = getattr(fn, "__module__", "") or ""
    return f"{mod.removeprefix('rackgate.')}.{getattr(fn, '__qualname__', repr(fn))}"
