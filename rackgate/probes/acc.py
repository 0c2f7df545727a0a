"""What an ACC check reads of the session's server (rackgate/gates/declare.py's "server" scope),
through the server object the item receives (rackgate/probes/served.py `Server`). A probe asks,
reads and raises CouldNotObserve when it cannot look; it never judges.

- `budget`: ACC-BUDGET's chat request to every DP rank at once (ATOM's data_parallel_rank hint;
  attached without a rack file, accuracy.budget_requests_attached spread by the server), each stream
  cut the moment its text is already degenerate (a '!' rank is named at once, never waited out to
  the request's timeout), under the hang rule; for a hang, the hung ranks' stacks (launch mode).
- `launch`: how the server was launched (ACC-FAKE-EPLB): every node's last `Engine kwargs:` line
  from its server log, and the rack file's launch command where it speaks for the server (the suite
  launched it, or attached, the server's own line cannot be read).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..config.model import Rack
from ..errors import CouldNotObserve
from .atom_log_facts import ENGINE_KWARGS, KwargsError, engine_kwargs
from .degenerate import degenerate_so_far
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


class Launched(Protocol):
    """What `launch` reads of the server object (rackgate.atom.served.Served): the rack file and the
    session's server (rackgate.atom.server.AtomServer: attached or not, its nodes' logs)."""
    rack: Rack
    server: Any


@dataclass(frozen=True)
class Launch:
    command: str | None                                # the launch command that speaks for the server (None: not known)
    kwargs: dict[str, dict[object, object]] = field(default_factory=dict)  # node -> its last `Engine kwargs:` dict
    lines: dict[str, str] = field(default_factory=dict)                    # node -> that line, as logged


def launch(s: Launched) -> Launch:
    """Every node's last `Engine kwargs:` line (a log that is not there, or a line that does not
    parse: could not observe); the rack file's command when the suite launched the server, or
    attached when no node's line was read."""
    srv, rack = s.server, s.rack
    logs = srv.node_logs()
    if srv.attached:
        missing = [n for n, log in logs.items() if not log.exists()]
        if missing:
            raise CouldNotObserve(f"attached (--atom-url): no server log at launch.log_path ({rack.launch.log_path}) "
                                  f"on {', '.join(missing)}")
    kwargs, lines = {}, {}
    for node, log in logs.items():
        recs = log.grep(ENGINE_KWARGS)  # LogMissing: could not observe
        if not recs:
            continue
        lines[node] = recs[-1].raw
        try:
            kwargs[node] = engine_kwargs(recs[-1].text)
        except KwargsError as e:
            raise CouldNotObserve(f"{node}: line {recs[-1].lineno}: {e}") from None
    command = rack.launch.command if (not srv.attached or not kwargs) else None
    if srv.attached and not command and not kwargs:
        raise CouldNotObserve("attached (--atom-url) with no launch.command in the rack file and no server log "
                              "with `Engine kwargs:`: cannot see how the server was launched")
    return Launch(command or None, kwargs, lines)
