"""FAB-DATACHECK: the expert path checked element by element, one item per GPU judged across the
rack (rackgate/fabric/datacheck.py runs it; rackgate/probes/datacheck.py reads it).

Who is blamed for wrong data (every rank reports what it received, located by source):
  - a source whose data arrived wrong at two or more ranks: that GPU sends wrong data (or
    addresses the wrong peer);
  - a rank that received wrong data from two or more sources (a sum counts as one): that GPU
    receives wrong data;
  - what is left, one source -> one rank: the pair (both GPUs' items name it).
A member that never arrived at the rendezvous fails as such, named by the ranks that waited for
it. A pass that hangs or fails without wrong data is located by the bisection; its verdict names
what the bisection narrowed it to (a GPU, a link, or: the whole set, pass on halves).
"""
from __future__ import annotations

import dataclasses

from ..config.model import Rack
from ..errors import CouldNotObserve, UnrecognisedOutput
from ..probes.datacheck import Outcome, Pass, Wrong, outcome
from .declare import Across, Shown, across_gpus, declare


def blame(wrong: list[Wrong]) -> dict[str, list[str]]:
    """member -> what it is blamed for, from every rank's located wrong data."""
    by_src: dict[str, set[str]] = {}
    by_dst: dict[str, set[str]] = {}
    for w in wrong:
        if w.src != "sum":
            by_src.setdefault(w.src, set()).add(w.dst)
        by_dst.setdefault(w.dst, set()).add(w.src)
    out: dict[str, list[str]] = {}
    senders = {s for s, d in by_src.items() if len(d - {s}) >= 2}
    left = [w for w in wrong if w.src not in senders]
    for s in sorted(senders):
        got = sorted({w.dst for w in wrong if w.src == s})
        out.setdefault(s, []).append(
            f"sends wrong data: {len(got)} ranks received wrong elements from it ({', '.join(got)}): "
            + "; ".join(w.describe() for w in wrong if w.src == s)[:1500])
    receivers = {d for d in {w.dst for w in left} if len({w.src for w in left if w.dst == d}) >= 2
                 or all(w.src == "sum" for w in left if w.dst == d)}
    for d in sorted(receivers):
        out.setdefault(d, []).append("receives wrong data: " + "; ".join(w.describe() for w in left if w.dst == d)[:1500])
    for w in left:
        if w.dst not in receivers:
            for m in (w.src, w.dst):
                out.setdefault(m, []).append(f"the pair {w.src} -> {w.dst}: {w.describe()}")
    return out


def _usable(p: Pass, member: str) -> None:
    """Could not observe when the pass did not run everywhere or its lines were not read."""
    node = member.split("/")[0]
    if node in p.unrun():
        o = p.nodes[node]
        raise CouldNotObserve(o.error or f"{node}: the container's python has no torch ({o.torch})")
    if p.unrun():
        raise CouldNotObserve(f"{member}: the data check could not run on {', '.join(p.unrun())} "
                              f"({'; '.join(p.nodes[n].error or p.nodes[n].torch for n in p.unrun())[:300]})")
    if p.unparsed:
        raise UnrecognisedOutput(f"{member}: a data-check verdict line was not recognised: {p.unparsed[0]}")


def datacheck_item(got: Across[Outcome], rack: Rack, where: str) -> list[str]:
    """FAB-DATACHECK for one GPU: every element it received right in every collective, size and
    iteration; not the source of wrong data elsewhere; it arrived; not what the bisection of a
    hang narrowed to. PASSED only on its own rank's clean verdict (in the whole pass, or in a
    bisection run that passed)."""
    o = got.mine
    member = f"{got.node}/gpu{got.gpu}"
    whole = o.whole
    if member not in whole.members:
        raise CouldNotObserve(f"{where}: not one of the data check's ranks (fabric.datacheck_ranks_per_node)")
    _usable(whole, member)
    found = []
    if member in whole.absent():
        waited = sorted(v.member for v in whole.verdicts.values() if member in v.missing)
        found.append(f"never arrived at the rendezvous within {rack.fabric.datacheck_join_s:g}s "
                     f"(fabric.datacheck_join_s): {', '.join(waited)} waited for it in vain")
    found += blame(whole.wrong()).get(member, [])
    b = o.bisection
    if b is not None and member in b.culprit and b.kind in ("gpu", "link", "set", "whole"):
        runs = "; ".join(r.brief() for r in o.runs)[:1500]
        what = {"gpu": f"the whole pass {whole.summary()}; bisection narrowed it to this GPU "
                       f"({len(o.runs)} extra runs)",
                "link": f"the whole pass {whole.summary()}; bisection narrowed it to the link "
                        f"{' <-> '.join(b.culprit)}: the pair fails alone, each GPU passes with a third "
                        f"({len(o.runs)} extra runs)",
                "set": f"the whole pass {whole.summary()}; bisection narrowed it to {', '.join(b.culprit)}",
                "whole": f"the whole pass {whole.summary()}; {b.note}"}[b.kind]
        spans = f" ({b.note})" if b.note and b.kind != "whole" else ""
        found.append(f"{what}{spans} -- runs: {runs}")
    if found:
        return found
    mine = whole.verdicts.get(whole.members.index(member))
    if mine is not None and mine.status in ("ok", "wrong"):  # wrong: what it got is another's fault (above)
        return []
    if mine is None:  # every rank the probe ran prints a verdict (its own, or the probe's for it): lost
        out = whole.nodes.get(got.node)
        raise CouldNotObserve(f"{where}: no verdict from this rank in the data-check probe's output on {got.node} "
                              f"(rc={out.rc if out else None}; its output ended before it)")
    passed = [r for r in o.runs if member in r.members and r.ok]
    if passed:
        return []
    if b is not None and b.kind in ("capped", "inconclusive"):
        raise CouldNotObserve(f"{where}: the whole pass {whole.summary()}; the bisection did not locate it: {b.note}")
    if b is None and not whole.ok:
        if not rack.fabric.datacheck_bisect:
            return [f"the whole pass {whole.summary()} (not located: fabric.datacheck_bisect is off)"]
        raise CouldNotObserve(f"{where}: the whole pass {whole.summary()}, with no verdict of this GPU to judge")
    raise CouldNotObserve(f"{where}: {mine.describe()}; no run without the fault passed on it")


def datacheck_shown(got: Across[Outcome], rack: Rack) -> list[Shown]:
    o = got.mine
    member = f"{got.node}/gpu{got.gpu}"
    out = [Shown("data check: the whole pass", o.whole.describe() + "\n" + "\n".join(
        v.describe() for _, v in sorted(o.whole.verdicts.items())))]
    if o.bisection is not None:
        out.append(Shown("data check: bisection", "\n".join(
            [f"{i}. {r.describe()}" for i, r in enumerate(o.runs, 1)]
            + [f"concluded: {o.bisection.kind} {', '.join(o.bisection.culprit)} {o.bisection.note}".rstrip()])))
    mine = o.whole.nodes.get(got.node)
    if mine is not None and mine.shown and member == f"{got.node}/gpu0":
        out.append(Shown(f"data-check probe on {got.node}", mine.shown))
    return out


declare(dataclasses.replace(across_gpus("FAB-DATACHECK", probe=outcome, judge=datacheck_item, shows=datacheck_shown),
                            timeout_s=3600))
