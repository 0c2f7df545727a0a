"""From the survey to a node set: which trays are usable, in which fabric domain, the best N-tray
sets ranked, and why every other tray is out.

A set is valid when all its trays are usable (every cell a pass: reachable, free, tuned this boot,
driver parameters, links active, accel_id right) and share one (PPOD_ID, VPOD_ID). Ranking: the
domain with the most usable trays first (spares to swap in), then the smallest tray span (trays
close together), then the lowest tray numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import TrayReport


@dataclass(frozen=True)
class NodeSet:
    nodes: tuple[str, ...]
    trays: tuple[int, ...]
    domain: tuple[str, str]

    @property
    def span(self) -> int:
        return self.trays[-1] - self.trays[0]

    def describe(self) -> str:
        return (f"{', '.join(self.nodes)} (trays {', '.join(map(str, self.trays))}; "
                f"ppod={self.domain[0]} vpod={self.domain[1]})")


@dataclass
class Proposal:
    n: int
    sets: list[NodeSet]
    excluded: dict[str, str]     # node -> why it is not in the chosen set
    domains: dict[tuple[str, str], list[str]]   # usable trays per domain

    @property
    def chosen(self) -> NodeSet | None:
        return self.sets[0] if self.sets else None


def propose(reports: list[TrayReport], n: int, top: int = 3) -> Proposal:
    if n < 1:
        raise ValueError(f"--pick must be at least 1 (got {n})")
    usable = [r for r in reports if r.usable]
    domains: dict[tuple[str, str], list[TrayReport]] = {}
    for r in sorted(usable, key=lambda r: r.tray):
        if r.domain is not None:  # always, for a usable tray
            domains.setdefault(r.domain, []).append(r)
    order = sorted(domains, key=lambda d: (-len(domains[d]), d))
    sets: list[NodeSet] = []
    for d in order:
        trays = domains[d]
        windows = [trays[i:i + n] for i in range(len(trays) - n + 1)]
        windows.sort(key=lambda w: (w[-1].tray - w[0].tray, w[0].tray))
        sets += [NodeSet(tuple(r.node for r in w), tuple(r.tray for r in w), d) for w in windows]
    sets = sets[:max(1, top)]
    chosen = sets[0] if sets else None
    excluded: dict[str, str] = {}
    for r in reports:
        if chosen and r.node in chosen.nodes:
            continue
        if not r.usable or r.domain is None:  # (a usable tray has a domain)
            excluded[r.node] = "; ".join(r.problems()) or "no fabric domain"
        elif chosen is None:
            excluded[r.node] = (f"usable, but its fabric domain (ppod={r.domain[0]} vpod={r.domain[1]}) has "
                                f"{len(domains[r.domain])} usable tray(s), fewer than {n}")
        elif r.domain != chosen.domain:
            excluded[r.node] = (f"another fabric domain: ppod={r.domain[0]} vpod={r.domain[1]} "
                                f"(the chosen set is ppod={chosen.domain[0]} vpod={chosen.domain[1]})")
        else:
            excluded[r.node] = "usable, same domain: a spare (not needed for this set)"
    return Proposal(n, sets, excluded, {d: [r.node for r in rs] for d, rs in domains.items()})
