"""This run's facts against the recorded baseline: one Move per fact, judged by its tolerance.

Pure functions over Fact values; the rack file's [regression] table (rackgate.config.regression)
gives each fact name its direction and allowance. A fact in the baseline that this run did not
record is a regression too ("missing"): a check that stopped measuring must not read as "no
change".
"""
from __future__ import annotations

from dataclasses import dataclass

from . import Fact


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


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def judge(name: str, old, new, tol) -> tuple[bool, str]:
    """(ok, why) for one fact moving from old to new under a Tolerance."""
    if tol.direction == "report":
        return True, ""
    if not (_num(old) and _num(new)) or tol.direction == "equal":
        return (old == new, "" if old == new else f"{old!r} -> {new!r}, must be equal")
    d = new - old
    allowed = max(tol.rel * abs(old), tol.abs)
    if tol.direction == "drop":
        bad = -d > allowed
    elif tol.direction == "rise":
        bad = d > allowed
    else:
        bad = abs(d) > allowed
    return (not bad, f"{old:g} -> {new:g} ({d:+.4g}), {tol.describe()}" if bad else "")


def compare(old: dict[str, Fact], new: dict[str, Fact], expect) -> list[Move]:
    """Every fact of either side, in key order; `expect` is the rack's RegressionExpect."""
    out = []
    for key in sorted(set(old) | set(new)):
        o, n = old.get(key), new.get(key)
        ref = o or n
        pattern, tol = expect.for_fact(ref.name)
        tdesc = tol.describe() + (f" [{pattern}]" if pattern else " [default]")
        unit = (n or o).unit
        if o is None:
            out.append(Move(ref.name, ref.where, unit, None, n.value, tdesc, True, "new in this run"))
        elif n is None and tol.direction == "report":
            out.append(Move(ref.name, ref.where, unit, o.value, None, tdesc, True, "not recorded now (reported only)"))
        elif n is None:
            out.append(Move(ref.name, ref.where, unit, o.value, None, tdesc, False,
                            f"recorded in the baseline (by {o.source or 'an unnamed check'}), missing now"))
        else:
            ok, why = judge(ref.name, o.value, n.value, tol)
            out.append(Move(ref.name, ref.where, unit, o.value, n.value, tdesc, ok, why))
    return out


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def table(moves: list[Move]) -> str:
    """The old -> new table, aligned for a terminal and an attachment."""
    head = ("fact", "where", "old -> new", "change", "tolerance", "verdict")
    lines = [(m.name, m.where or "-", f"{_fmt(m.old)} -> {_fmt(m.new)}" + (f" {m.unit}" if m.unit else ""),
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
