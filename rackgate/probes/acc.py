"""What an ACC check reads of the session's server (rackgate/gates/declare.py's "server" scope),
through the server the item hands it (rackgate/server_access.py `ServerAccess`). A probe asks,
reads and raises CouldNotObserve when it cannot look; it never judges.

- `budget`: ACC-BUDGET's chat request to every DP rank at once (ATOM's data_parallel_rank hint;
  attached without a rack file, accuracy.budget_requests_attached spread by the server), each stream
  cut the moment its text is already degenerate (a '!' rank is named at once, never waited out to
  the request's timeout), under the hang rule; for a hang, the hung ranks' stacks (launch mode).
- `quick`, `under_load`, `full`: the GSM8K runs of the subject layer above (rackgate/gsm8k/session.py),
  which reach the probe as the session's runs handed in beside the server (`s.runs.quick_gate()`,
  `.under_load()`, `.lm_eval()`: rackgate/probes/runs.py `Runs`, made by the `served` fixture, as a
  node's probe gets the session's fabric runs): each read as plain data (`Quick`, `UnderLoad`,
  `Full`), every hang in it as the hang rule read it (`served.hang_of`: the requests, the hung ranks' stacks), for the judges of
  rackgate/gates/accuracy.py.
- `launch`: how the server was launched (ACC-FAKE-EPLB): every node's last `Engine kwargs:` line
  from its server log, and the rack file's launch command where it speaks for the server (the suite
  launched it, or attached, the server's own line cannot be read).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..server_access import ServerAccess, ServerLog, Spread
from .atom_log_facts import ENGINE_KWARGS, KwargsError, engine_kwargs
from .degenerate import degenerate_so_far
from .gsm8k_results import Results
from .runs import Decided, QuickRun, WithRuns
from .served import Hang, hang_of

__all__ = ["Decided", "QuickRun"]   # what a judge reads of the quick gate's run (rackgate/probes/runs.py)


@dataclass(frozen=True)
class Budget:
    spread: Spread                            # every answer, the hang, the shares
    max_tokens: int                           # the budget asked with (accuracy.max_tokens)
    stacks: tuple[tuple[str, str], ...] = ()  # (title, text): the hung ranks' stacks and log lines
    stacks_said: str = ""                     # one line naming what was taken


def budget(s: ServerAccess) -> Budget:
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


class LaunchedServer(Protocol):
    """The session's server as launched or attached (rackgate.atom.server.AtomServer)."""
    @property
    def attached(self) -> bool: ...
    def node_logs(self) -> Mapping[str, ServerLog]: ...


class Launched(Protocol):
    """What `launch` reads of the server object (rackgate.atom.served.Served): the rack file and the
    session's server (attached or not, its nodes' logs)."""
    @property
    def rack(self) -> Rack: ...
    @property
    def server(self) -> LaunchedServer: ...


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


# --- the GSM8K runs (ACC-QUICK, ACC-UNDER-LOAD, ACC-GSM8K) ---------------------------------------
@dataclass(frozen=True)
class Quick:
    """The quick gate's run (the session's one, made by whichever ACC probe asks first): every rank
    asked once first (`pre`: its evidence, `pre_hang`), then the questions' result, or their hang
    (`hang`, `scored` before it), or why it could not look (`blind`)."""
    url: str
    pre: str = ""                             # every rank asked once: the evidence
    pre_hang: Hang | None = None
    hang: Hang | None = None
    scored: int = 0
    result: QuickRun | None = None
    blind: str = ""


def _quick(s: WithRuns, asker: str) -> Quick:
    read = s.runs.quick_gate()
    pre = read.pre
    if pre is None:
        return Quick(s.url, result=read.result, blind=read.blind)
    hang = hang_of(s, read.hang, asker) if read.hang is not None else None
    return Quick(s.url, pre.evidence(), hang_of(s, pre, asker), hang, read.scored, read.result,
                 read.blind or pre.nothing_back() or "")


def quick(s: WithRuns) -> Quick:
    """ACC-QUICK's read: the session's quick gate run (`s.runs.quick_gate()`)."""
    return _quick(s, "ACC-QUICK")


@dataclass(frozen=True)
class UnderLoad:
    """ACC-UNDER-LOAD's read: the quick gate's run (catalogue `reads`), and -- only when that run has
    an accuracy of the model's to compare with -- the questions asked under load: every rank asked
    once first (`pre`, `pre_hang`), their accuracy (`correct` of `asked`) or their hang (`hang`,
    `scored` before it), what the fillers did, why it could not look (`blind`)."""
    quick: Quick
    ran: bool = False
    pre: str = ""
    pre_hang: Hang | None = None
    correct: int = 0
    asked: int = 0
    per_question: str = ""
    hang: Hang | None = None
    scored: int = 0
    fillers: str = ""
    fillers_answered: int = 0
    blind: str = ""


def under_load(s: WithRuns) -> UnderLoad:
    """The quick gate's run first; the questions under load (`s.runs.under_load()`) only when
    that run read the model's answers (no hang, something scored, no degenerate answers)."""
    q = _quick(s, "ACC-UNDER-LOAD")
    if q.pre_hang or q.hang or q.result is None or q.result.degenerate_line():
        return UnderLoad(q)
    run = s.runs.under_load()
    pre = run.pre
    return UnderLoad(q, True, pre.evidence() if pre is not None else "",
                     hang_of(s, pre, "ACC-UNDER-LOAD") if pre is not None else None, run.correct, run.asked,
                     run.per_question, hang_of(s, run.hang, "ACC-UNDER-LOAD") if run.hang is not None else None,
                     run.scored, run.fillers, run.fillers_answered,
                     run.blind or (pre.nothing_back() if pre is not None else "") or "")


@dataclass(frozen=True)
class Full:
    """ACC-GSM8K's read: lm-eval's run (`s.runs.lm_eval()`) as its watch saw it -- the command,
    every rank asked once first (`pre`, `pre_hang`), a mid-run look (`look`: its evidence,
    `look_hang`, `stalled`: lm-eval's progress then) or lm-eval's own request timed out while every
    rank answered (`late`, `unanswered`, `slowest_s`, `routing`), its log's last lines, its results,
    why it could not look (`blind`)."""
    url: str
    command: str = ""
    limit: int = 0
    pre: str = ""
    pre_hang: Hang | None = None
    stalled: str = ""
    look: str = ""
    look_hang: Hang | None = None
    late: str = ""
    unanswered: str = ""
    slowest_s: float = 0.0
    routing: str = ""
    tail: str = ""
    results: Results | None = None
    blind: str = ""


def full(s: WithRuns) -> Full:
    run = s.runs.lm_eval()
    pre, look = run.pre, run.look
    return Full(s.url, run.command, run.limit, pre.evidence() if pre is not None else "",
                hang_of(s, pre, "ACC-GSM8K") if pre is not None else None, run.stalled,
                look.evidence() if look is not None else "", hang_of(s, look, "ACC-GSM8K") if look is not None else None,
                run.late, run.unanswered, look.slowest_s if look is not None else 0.0,
                look.routing.describe() if look is not None else "", run.tail, run.results,
                run.blind or (pre.nothing_back() if pre is not None else "") or "")
