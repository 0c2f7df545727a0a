"""What SRV-KV and SRV-TRANSLATION read: what the ranks logged while booting, grepped on each node
(the logs are never copied here), also when the boot failed -- a rank whose KV budget went negative
is what stopped it.

- SRV-KV (a "rank" check, sees="log": `ServerLogs`): each rank's `Memory budget:` lines, its `Per-request
  cache tensor ... exceeds available KV budget` error and its `experts=` figures (the formats:
  probes/atom_log_facts.py), one grep per node for every rank of it. A node launched without rank
  labels (ATOM_LOG_MORE) writes unlabelled lines: its ranks are judged on the node's lowest budget.
- SRV-TRANSLATION (a "node" check, sees="log"): the node's counts of the rocjitsu hook's lines
  (runbook appendix B, `HotswapCounts`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import CouldNotObserve, NotRun
from ..server_access import ServerLog
from .atom_log_facts import HotswapCounts, KvError, MemoryBudget, experts, kv_error, memory_budget
from .boot import Boot
from .target import On, ServerLogs

KV_PATTERNS = ("Memory budget:", "experts=", "exceeds available KV budget")
HOTSWAP_PATTERNS = ("installed eager", "outcome=translated", "reused tier", "translation_status=")


@dataclass(frozen=True)
class RankKv:
    """One DP rank's KV budget lines (`unseen`: why they could not be read, raised by its judge)."""
    node: str
    rank: int
    budgets: tuple[MemoryBudget, ...] = ()
    experts: tuple[int, ...] = ()
    errors: tuple[KvError, ...] = ()
    unseen: CouldNotObserve | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Hotswap:
    """One node's counts of the hook's lines (`grep -c` of the runbook's four patterns)."""
    node: str
    counts: HotswapCounts


def not_booted(boot: Boot) -> NotRun:
    """What a check reads of a boot that stopped before its evidence: not run, pointing at SRV-BOOT."""
    return NotRun("SRV-BOOT", f"failed: the server did not boot ({boot.summary})")


def kv_budgets(s: ServerLogs) -> dict[int, RankKv]:
    """{rank: its KV budget lines} on every node; a node's log that cannot be read is each of its
    ranks' could-not-observe (the other nodes' ranks are judged)."""
    out: dict[int, RankKv] = {}
    for node, log in s.logs.items():
        try:
            recs = log.grep(*KV_PATTERNS)
        except CouldNotObserve as e:
            out.update({r: RankKv(node, r, unseen=e) for r in log.ranks})
            continue
        out.update({r: _rank_kv(node, r, log, recs, s.boot) for r in log.ranks})
    return out


def _rank_kv(node: str, rank: int, log: ServerLog, recs: Sequence[Any], boot: Boot | None) -> RankKv:
    mine: list[Any] = []
    unattributed: list[Any] = []
    for rec in recs:
        r = log.rank_of(rec)
        (mine if r == rank else unattributed if r is None else []).append(rec)
    try:
        got = _figures(node, rank, mine)
        if not got.budgets and not got.errors and unattributed:
            # no rank label on these lines (launched without ATOM_LOG_MORE): the node's lines judged
            got = _figures(node, rank, unattributed)
            if got.budgets and not got.errors and len(got.budgets) < len(log.ranks):
                raise CouldNotObserve(f"{node} logged {len(got.budgets)} unlabelled `Memory budget:` lines for "
                                      f"{len(log.ranks)} ranks: launch with launch.rank_labels = true to name them")
            if got.budgets:
                got = RankKv(node, rank, (min(got.budgets, key=lambda b: b.available_for_kv),), got.experts, got.errors)
        if not got.budgets and not got.errors:
            if boot is not None and boot.kind != "ready" and node not in boot.past_rendezvous:
                raise not_booted(boot)  # the node stopped before the KV budget arithmetic
            raise CouldNotObserve(f"{node}: no `Memory budget:` line for dp{rank} in {log.path}: nothing to judge")
    except CouldNotObserve as e:  # LogFactError, a line whose figures do not parse, too
        return RankKv(node, rank, unseen=e)
    return got


def _figures(node: str, rank: int, recs: Sequence[Any]) -> RankKv:
    texts = [r.text for r in recs]
    return RankKv(node, rank, tuple(b for b in map(memory_budget, texts) if b),
                  tuple(e for e in map(experts, texts) if e is not None),
                  tuple(e for e in map(kv_error, texts) if e))


def hotswap(on: On) -> Hotswap:
    """The node's counts of the hook's lines. On B0 the healthy signature is an absence, so it only
    counts in a log the suite can read as ATOM's and that says something."""
    boot = on.server_boot()
    if boot is not None and boot.note:
        raise CouldNotObserve(boot.note)
    log = on.server_log()
    if not log.tail(5).strip():
        raise CouldNotObserve(f"{on.node}: the server log {log.path} is empty: no hotswap lines, and nothing to "
                              "say that the server wrote any")
    c = HotswapCounts()
    for rec in log.grep(*HOTSWAP_PATTERNS):
        c.add(rec.raw)
    return Hotswap(on.node, c)
