"""A declaration run on a place: the probe's facts, the evidence they show, the facts `-m regression`
records and the judge's findings. The pytest items (one node, one GPU, or a node judged across the
rack) and the survey's cells (one tray) both run checks through here: one wiring of probe to judge.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Mapping, Sequence

from ..access import NodeAccess
from ..config.model import Rack
from ..errors import CouldNotObserve
from ..gates.declare import Across, Check, Fact, Shown
from ..probes import drm
from ..probes.target import On
from ..transport import fanout


@dataclass(frozen=True)
class Judged:
    """One item's worth of a check: what it read, showed and recorded, and the judge's findings
    ([] healthy) or the judge's refusal (`error`: it could not judge what it was given)."""
    on: Any  # On (a node, a GPU), OnPair, or None for a "server" or "rank" check
    got: Any
    shown: Sequence[Shown]
    facts: Sequence[Fact]
    findings: list[str] = field(default_factory=list)
    error: CouldNotObserve | None = None
    kept: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # sets for the baseline (Check.keeps)


@dataclass(frozen=True)
class Place:
    """One place of a tray a check looked at (the node, or one GPU): judged, or not observed."""
    where: str
    gpu: int | None
    judged: Judged | None = None
    error: CouldNotObserve | None = None


def judge_on(c: Check[Any], on: On, read: Callable[[], Any] | None = None) -> Judged:
    """Read (the declaration's probe on `on`, or `read`), show, record, judge. The probe's
    CouldNotObserve propagates (nothing was read, nothing to show); the judge's is kept in
    `error`, after the evidence of what it was given."""
    return judge_at(c, on.rack, on.key, on.where, (lambda: c.probe(on)) if read is None else read, on)


def judge_at(c: Check[Any], rack: Rack, key: str, where: str, read: Callable[[], Any],
             on: Any = None) -> Judged:
    """`judge_on` for any place: `key` names it in facts (node2, node2/card3, node3/dp9, server),
    `where` in findings; a "server" or "rank" check's read asks the served endpoint."""
    got = read()
    shown = c.shows(got, rack)
    facts = c.facts(got, key) if c.facts is not None else ()
    kept = c.keeps(got, key) if c.keeps is not None else {}
    try:
        return Judged(on, got, shown, facts, c.judge(got, rack, where), kept=kept)
    except CouldNotObserve as e:
        return Judged(on, got, shown, facts, error=e, kept=kept)


def read_across(c: Check[Any], rack: Rack, hosts: Mapping[str, NodeAccess],
                missing: Mapping[str, Exception], session: Mapping[str, Any] | None = None
                ) -> tuple[dict[str, Any], dict[str, CouldNotObserve]]:
    """A "rack" check's probe on every node that answers, at once: (facts, could-not-observe) by
    node; a node that could not be reached (`missing`) is unseen in its transport's words.
    `session`: the session's shared runs every `On` carries (`rounds`, `collectives`)."""
    names = list(hosts)
    got = fanout(names, lambda n: c.probe(On(rack, hosts[n], n, **(session or {}))))
    facts: dict[str, Any] = {}
    unseen: dict[str, CouldNotObserve] = {n: e if isinstance(e, CouldNotObserve) else CouldNotObserve(str(e))
                                          for n, e in missing.items()}
    for n, g in zip(names, got):
        if isinstance(g, CouldNotObserve):
            unseen[n] = g
        elif isinstance(g, Exception):
            raise g  # a bug of ours: the item's internal error
        else:
            facts[n] = g
    return facts, unseen


def on_tray(c: Check[Any], host: NodeAccess, node: str, rack: Rack, fixed: Mapping[str, Any] | None = None) -> list[Place]:
    """The declaration run on one tray, as its pytest items run it on that node: one place for a
    "node" check, one per GPU for a "gpu" check (the cards discovered as the `gpu` fixture does;
    a listing it cannot read is every GPU's could-not-observe), and for a "rack" check the node
    judged across the tray alone (`Across` of this tray; a "rack-gpu" check: each GPU, the tray read
    once). `fixed` pins facts for every tray (the survey's one clock, PLAT-FREE's `now`)."""
    def read(on: On) -> Callable[[], Any]:
        def facts() -> Any:
            got = c.probe(on)
            if fixed:
                got = dataclasses.replace(got, **fixed)
            return Across(node, {node: got}, {}) if c.per == "rack" else got
        return facts

    if c.per == "rack-gpu":
        return _tray_gpus(c, host, node, rack)
    ons: list[On | tuple[int, CouldNotObserve]] = []
    if c.per == "gpu":
        try:
            cards = drm.discover(host)
            ons = [On(rack, host, node, g, cards.card(g, rack.gpus_per_node)) for g in range(rack.gpus_per_node)]
        except CouldNotObserve as e:
            ons = [(g, e) for g in range(rack.gpus_per_node)]
    else:
        ons = [On(rack, host, node)]
    out: list[Place] = []
    for on in ons:
        if isinstance(on, tuple):
            out.append(Place(f"{node}/gpu{on[0]}", on[0], error=on[1]))
            continue
        try:
            out.append(Place(on.where, on.gpu, judged=judge_on(c, on, read(on))))
        except CouldNotObserve as e:
            out.append(Place(on.where, on.gpu, error=e))
    return out


def _tray_gpus(c: Check[Any], host: NodeAccess, node: str, rack: Rack) -> list[Place]:
    """A "rack-gpu" check on one tray: the probe once, every GPU judged across this tray alone; a
    tray it cannot read (or whose cards it cannot list) is every GPU's could-not-observe."""
    try:
        cards = drm.discover(host)
        ons = [On(rack, host, node, g, cards.card(g, rack.gpus_per_node)) for g in range(rack.gpus_per_node)]
        got = c.probe(On(rack, host, node))
    except CouldNotObserve as e:
        return [Place(f"{node}/gpu{g}", g, error=e) for g in range(rack.gpus_per_node)]
    return _gpus_across(c, ons, {node: got}, rack)


def _gpus_across(c: Check[Any], ons: Sequence[On], every: Mapping[str, Any], rack: Rack) -> list[Place]:
    out: list[Place] = []
    for on in ons:
        try:
            out.append(Place(on.where, on.gpu, judged=judge_at(c, rack, on.key, on.where,
                                                                partial(Across, on.node, every, {}, on.gpu), on)))
        except CouldNotObserve as e:
            out.append(Place(on.where, on.gpu, error=e))
    return out


def across_trays(c: Check[Any], places: Sequence[Place], every: Mapping[str, Any], rack: Rack) -> list[Place]:
    """A "rack-gpu" check's places on one tray (as `on_tray` made them), judged again across
    `every` tray's facts (tray -> what its probe read): the survey's rack-wide pass, as the items
    judge across the rack (an accel_id reported on two trays fails both)."""
    again = _gpus_across(c, [p.judged.on for p in places if p.judged is not None], every, rack)
    return [again.pop(0) if p.judged is not None else p for p in places]
