"""This run's facts against the recorded baseline: one Move per fact, judged by its tolerance.

Pure functions over Fact values; the rack file's [regression] table (rackgate.config.regression)
gives each fact name its direction and allowance (widened by the spread of the baseline's
repeated samples). A fact in the baseline that this run did not record is a regression too
("missing"): a check that stopped measuring must not read as "no change". A fact new in this
run is listed, never dropped. `header()` puts old image -> new image above the table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import Fact, _num

if TYPE_CHECKING:
    from ..config.regression import RegressionExpect, Tolerance

Band = tuple[float | None, float | None]


@dataclass(frozen=True)
class Move:
    name: str
    where: str
    unit: str
    old: object  # None: new in this run
    new: object  # None: missing in this run
    tolerance: str
    ok: bool
    why: str = ""
    # The band this run's value had to stay in (numeric facts judged by direction): (lo, hi),
    # None for an open side.
    band: Band | None = None

    @property
    def key(self) -> str:
        return f"{self.name}@{self.where}" if self.where else self.name

    @property
    def change(self) -> str:
        if self.old is None:
            return "new"
        if self.new is None:
            return "missing"
        if _num(self.old) and _num(self.new):
            d = self.new - self.old
            rel = f" ({d / abs(self.old):+.1%})" if self.old else ""
            return f"{d:+.4g}{rel}"
        return "same" if self.old == self.new else "changed"


def band(old: object, tol: Tolerance, spread: float | None = None) -> Band | None:
    """(lo, hi) the new value may take; None for facts judged by equality or not at all."""
    if not _num(old) or tol.direction in ("equal", "report"):
        return None
    a = tol.allowance(old, spread)
    return (None if tol.direction == "lower" else old - a, None if tol.direction == "higher" else old + a)


def judge(name: str, old: object, new: object, tol: Tolerance, spread: float | None = None) -> tuple[bool, str]:
    """(ok, why) for one fact moving from old to new under a Tolerance."""
    if tol.direction == "report":
        return True, ""
    if not (_num(old) and _num(new)) or tol.direction == "equal":
        return (old == new, "" if old == new else f"{old!r} -> {new!r}, must be equal")
    lim = band(old, tol, spread)
    assert lim is not None  # numbers, judged by direction
    lo, hi = lim
    bad = (lo is not None and new < lo) or (hi is not None and new > hi)
    return (not bad, f"{old:g} -> {new:g} ({new - old:+.4g}), {tol.describe(spread)}" if bad else "")


def compare(old: dict[str, Fact], new: dict[str, Fact], expect: RegressionExpect) -> list[Move]:
    """Every fact of either side, in key order; `expect` is the rack's RegressionExpect."""
    out = []
    for key in sorted(set(old) | set(new)):
        o, n = old.get(key), new.get(key)
        ref = o or n
        assert ref is not None  # the key came from one side or the other
        named, tol = expect.for_fact(ref.name)
        spread = o.spread if o is not None else None
        tdesc = tol.describe(spread) + ("" if named else " [default]")
        unit = (n or ref).unit
        if o is None:  # then ref is n
            out.append(Move(ref.name, ref.where, unit, None, ref.value, tdesc, True, "new in this run"))
        elif n is None and tol.direction == "report":
            out.append(Move(ref.name, ref.where, unit, o.value, None, tdesc, True, "not recorded now (reported only)"))
        elif n is None:
            out.append(Move(ref.name, ref.where, unit, o.value, None, tdesc, False,
                            f"recorded in the baseline (by {o.source or 'an unnamed check'}), missing now"))
        else:
            ok, why = judge(ref.name, o.value, n.value, tol, spread)
            out.append(Move(ref.name, ref.where, unit, o.value, n.value, tdesc, ok, why,
                            band(o.value, tol, spread)))
    return out


PROVENANCE = (("image", "image"), ("image_id", "image id"), ("atom_commit", "ATOM commit"), ("rack", "rack"),
              ("time", "date"))


def header(old_prov: dict[str, Any], new_prov: dict[str, Any]) -> str:
    """Old -> new provenance, image first: what changed between the two runs."""
    rows = []
    for key, label in PROVENANCE:
        a, b = old_prov.get(key) or "?", new_prov.get(key) or "?"
        rows.append(f"{label + ':':<13}{a} -> {b}" + ("" if a != b or key == "time" else "   (same)"))
        for side, prov in (("old", old_prov), ("new", new_prov)):
            per = prov.get(f"{key}_by_node")
            if isinstance(per, dict) and per:
                rows.append(f"{'':<13}{side}: the nodes disagree on the {label}: "
                            + ", ".join(f"{n}={v}" for n, v in per.items()))
    return "\n".join(rows)


def verdict(moves: list[Move]) -> str:
    bad = sum(1 for m in moves if not m.ok)
    return f"{bad} of {len(moves)} facts beyond tolerance" if bad else f"all {len(moves)} facts within tolerance"


def _fmt(v: object, width: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    s = str(v)
    return s[:width - 3] + "..." if width and len(s) > width else s


def table(moves: list[Move]) -> str:
    """The old -> new table, aligned for a terminal and an attachment."""
    head = ("fact", "where", "old -> new", "change", "tolerance", "verdict")
    lines = [(m.name, m.where or "-", f"{_fmt(m.old, 40)} -> {_fmt(m.new, 40)}" + (f" {m.unit}" if m.unit else ""),
              m.change, m.tolerance, "ok" if m.ok else "REGRESSED") for m in moves]
    widths = [max(len(str(r[i])) for r in [head, *lines]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths))]
                     + [fmt.format(*r) for r in lines])


def csv(moves: list[Move]) -> str:
    rows = ["fact,where,unit,old,new,change,tolerance,verdict"]
    for m in moves:
        cells = [m.name, m.where, m.unit, _fmt(m.old), _fmt(m.new), m.change, m.tolerance,
                 "ok" if m.ok else "REGRESSED"]
        rows.append(",".join('"' + c.replace('"', '""') + '"' if ("," in c or '"' in c) else c for c in cells))
    return "\n".join(rows)
