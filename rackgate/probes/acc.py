"""What an ACC check reads of the session's server (rackgate/gates/declare.py's "server" scope),
through the server object the item receives (rackgate/probes/served.py `Server`). A probe asks,
reads and raises CouldNotObserve when it cannot look; it never judges.

- `budget`: ACC-BUDGET's chat request to every DP rank at once (ATOM's data_parallel_rank hint;
  attached without a rack file, accuracy.budget_requests_attached spread by the server), each stream
  cut the moment its text is already degenerate (a '!' rank is named at once, never waited out to
  the request's timeout), under the hang rule; for a hang, the hung ranks' stacks (launch mode).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import CouldNotObserve
from .language import degenerate_so_far
from .served import Server


@dataclass(frozen=True)
class Budget:
    spread: Any                               # rackgate.atom.perrank.Spread: every answer, the hang, the shares
    max_tokens: int                           # the budget asked with (accuracy.max_tokens)
    stacks: tuple[tuple[str, str], ...] = ()  # (title, text): the hung ranks' stacks and log lines
    stacks_said: str = ""                     # one line naming what was taken


def budget(s: Server) -> Budget:
    cfg = s.rack.accuracy
    spread = s.per_rank.ask([cfg.budget_prompt], cfg.max_tokens, chat=True, attached=cfg.budget_requests_attached,
                            stop_when=degenerate_so_far, timeout=cfg.request_timeout_s,
                            decisive=lambda g: bool(g.stopped))
    if spread.hang():
        shown, said = s.stacks(spread.hung_ranks())
        return Budget(spread, cfg.max_tokens, tuple(shown), said)
    blind = spread.nothing_back()
    if blind:
        raise CouldNotObserve(blind)
    return Budget(spread, cfg.max_tokens)
