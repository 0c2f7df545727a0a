"""What SRV-DEADLOCK reads (a "rank" check, rackgate/gates/serverlogs.py `rank_synced`): the server
under the load that broke it on the real rack, then what every rank logged meanwhile.

`under_load` sends the load through the per-rank mechanism (`s.per_rank`: every rank asked, the
hang rule) and stops once the logs settle (some rank logged ATOM's DP-sync timeout and no further
rank did for one more poll: the others time out at about the same moment); then each node's
`_sync_dp_state failed` and `KV usage:` records (probes/atom_log_facts.py), by rank. It returns,
per rank, whether it logged the timeout and its last KV line, beside the load's Spread and hang and
the timeouts logged without a rank label (by node). A boot whose log format the suite did not
recognise is could-not-observe: the verdict rests on what the ranks log.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..errors import CouldNotObserve
from ..server_access import Got, ServerAccess, ServerLog, Spread
from . import fit, load
from .atom_log_facts import kv_usage, sync_dp_failed
from .degenerate import degenerate, degenerate_so_far
from .served import Hang, hang_of

SYNC_FAILED = "_sync_dp_state failed"
KV_LINE = "KV usage:"


@dataclass(frozen=True)
class Load:
    """The session's one load and what the logs said of it (the same for every rank's item)."""
    url: str
    spread: Spread                            # the load as read
    window_s: float                           # serving.deadlock_window_s
    hang: Hang | None = None                  # requests in flight past the hang bound while others came back
    unlabelled: Mapping[str, int] = field(default_factory=dict)  # node -> timeouts logged without a rank label
    node_ranks: Mapping[str, range] = field(default_factory=dict)  # node -> the DP ranks its log holds
    lines: tuple[str, ...] = ()               # every `_sync_dp_state failed` line, as evidence

    @property
    def unanswered(self) -> int:
        """The requests that did not come back answered (hung, cancelled, or not replied)."""
        s = self.spread
        return int(len(s.hung) + s.cancelled + sum(1 for g in s.got if not g.replied))


@dataclass(frozen=True)
class Synced:
    """One DP rank under the load: its `_sync_dp_state failed` line ('' when it logged none) and its
    last `KV usage:` line ('' when none)."""
    rank: int
    node: str
    timed_out: str
    kv: str
    run: Load


def _degenerate(g: Got) -> bool:
    return bool(g.stopped or (not g.error and g.replied and degenerate(g.text)))


def _until_settled(logs: Mapping[str, ServerLog]) -> Callable[[], bool]:
    """stop() for the load: True once some rank has logged the DP-sync timeout and no further rank
    has logged it for one more poll."""
    last = {"n": 0}

    def stop() -> bool:
        n = int(sum(log.count(SYNC_FAILED) for log in logs.values()))
        settled = bool(n > 0 and n == last["n"])
        last["n"] = n
        return settled
    return stop


LOAD_WORDS, LOAD_TOKENS = 600, 64


def under_load(s: ServerAccess) -> dict[int, Synced]:
    """SRV-DEADLOCK's one read: the load (serving.deadlock_requests prompts of ~600 tokens -- fewer where
    the model's length is shorter (probes/fit.py) --, 64 tokens each, every rank asked, at most
    serving.deadlock_window_s), stopped once the logs settle or on a degenerate answer; then every
    node's `_sync_dp_state failed` and `KV usage:` records by rank."""
    note = s.log_note()
    if note:  # the verdict rests on what the ranks log: a log the suite cannot read says nothing
        raise CouldNotObserve(note)
    cfg = s.rack.serving
    logs = s.logs()
    words, _ = fit.fitting_words(LOAD_WORDS, LOAD_TOKENS, s.max_model_len()[0])   # sized to what the server serves
    spread = s.per_rank.ask([load.prompt(words, i) for i in range(cfg.deadlock_requests)], LOAD_TOKENS,
                            attached=cfg.deadlock_requests, at_least=cfg.deadlock_requests,
                            timeout=cfg.deadlock_window_s, stop=_until_settled(logs),
                            stop_when=degenerate_so_far, decisive=_degenerate)
    timed_out: dict[int, str] = {}
    kv_lines: dict[int, str] = {}
    unlabelled: dict[str, int] = {}
    lines: list[str] = []
    for n, log in logs.items():
        for rec in log.grep(SYNC_FAILED, KV_LINE):
            if kv_usage(rec.text) is not None:
                r = log.rank_of(rec)
                if r is not None:
                    kv_lines[r] = rec.text.strip()
                continue
            if sync_dp_failed(rec.text) is None:
                continue
            lines.append(f"{log.who(rec)} line {rec.lineno}: {rec.text.strip()[:160]}")
            r = log.rank_of(rec)
            if r is None:
                unlabelled[n] = unlabelled.get(n, 0) + 1
            else:
                timed_out[r] = rec.text.strip()
    run = Load(s.url, spread, cfg.deadlock_window_s, hang_of(s, spread, "SRV-DEADLOCK"), unlabelled,
               {n: log.ranks for n, log in logs.items()}, tuple(lines))
    return {r: Synced(r, node, timed_out.get(r, ""), kv_lines.get(r, ""), run) for r, node in s.table.items()}
