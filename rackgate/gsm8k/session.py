"""The session's GSM8K runs, as the ACC rows' probes read them (rackgate/probes/acc.py): each an
of the session's runs handed to the server's probes beside the server (rackgate/probes/runs.py
`Runs`, made by the `served` fixture, rackgate/fixtures/server.py), as the session's fabric runs
reach a node's probe.

- `QuickGate`: the quick gate's paced questions (ACC-QUICK), run once per session the first time a
  probe asks -- ACC-QUICK, which judges them, or ACC-UNDER-LOAD, which compares its accuracy under
  load with theirs (catalogue `reads`) -- every later asker gets the same `QuickRead`, its hang or
  its could-not-observe too.
- `under_load`: ACC-UNDER-LOAD's questions asked while fillers keep the server full (`UnderLoadRead`).
- `lm_eval`: ACC-GSM8K's lm-eval run under its `Stall` watch (`FullRead`): every rank asked once
  before it starts, and again whenever its progress stalls past the hang bound or its log says a
  request timed out; a rank that does not answer then, or a timeout while every rank answers,
  ends lm-eval, and the watch records what it saw.

A read holds no verdict: every hang is kept as the per-rank mechanism read it (a perrank.Spread),
every could-not-observe as its line (`blind`); the judges (gates/accuracy.py) word them. Per pytest
process, as the server is: the askers are the server's items, on one xdist worker."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..atom.logs import rank_table
from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import load
from ..probes.gsm8k_results import Results
from ..probes.served import PREFLIGHT_PROMPT
from ..server_access import Spread
from . import lmeval, quick, setup, under_load
from .data import DataError
from .scoring import Outcome
from .task import TaskError

if TYPE_CHECKING:
    from ..atom.perrank import PerRank
    from ..atom.served import Served

Say = Callable[[str], None]


def _preflight(per_rank: PerRank) -> Spread:
    """Every rank asked once, short, all at once: a rank that does not answer is seen at once."""
    return per_rank.ask([PREFLIGHT_PROMPT], 4, stream=False)


@dataclass(frozen=True)
class QuickRead:
    """What the quick gate's run read: every rank asked once first (`pre`, a perrank.Spread: the pace
    starts at one question), then the questions -- their result, or their hang (`hang`, the
    questions read as a Spread; `scored` before it), or why it could not look (`blind`)."""
    pre: Spread | None = None
    result: quick.QuickResult | None = None
    hang: Spread | None = None
    scored: int = 0
    blind: str = ""


class QuickGate:
    """The session's quick gate run: `read(server, per_rank)` runs it the first time, later calls get
    the same QuickRead."""

    def __init__(self, rack: Any, progress: Say):
        self.rack, self.progress = rack, progress
        self._read: QuickRead | None = None

    def read(self, server: Served, per_rank: PerRank) -> QuickRead:
        if self._read is None:
            self._read = self._run(server, per_rank)
        return self._read

    def _run(self, server: Served, per_rank: PerRank) -> QuickRead:
        cfg = self.rack.accuracy
        try:
            task = setup.task_for(cfg)
        except (TaskError, DataError) as e:
            return QuickRead(blind=str(e))
        pre = _preflight(per_rank)  # every rank first: a hang is seen at once
        if pre.hang() or pre.nothing_back():
            return QuickRead(pre)
        # the questions go to the ranks in turn where the server takes the hint (decided once per run)
        table, hinted = per_rank.routing.table, per_rank.routing.hinted
        try:
            result = quick.run(task, setup.clients_for(self.rack, server.url, server.client.model),
                               setup.sprt_for(cfg), quick.question_order(len(task), cfg.quick_seed),
                               cfg.num_concurrent, progress=self.progress, progress_every_s=cfg.progress_every_s,
                               wait_s=cfg.request_timeout_s, timeout_s=cfg.quick_timeout_s,
                               table=table if hinted else None, hang=per_rank.hang)
        except quick.QuickHang as e:
            return QuickRead(pre, hang=per_rank.read(e.fanned), scored=e.scored, blind=str(e))
        except quick.QuickTimeout as e:
            return QuickRead(pre, blind=str(e))
        return QuickRead(pre, result)


# --- ACC-UNDER-LOAD ------------------------------------------------------------------------------
@dataclass(frozen=True)
class UnderLoadRead:
    """The questions asked under load: every rank asked once first (`pre`), then the questions'
    per-question lines and accuracy, or their hang (`hang`, a Spread; `scored` before it); what the
    fillers did; why it could not look (`blind`)."""
    pre: Spread | None = None
    correct: int = 0
    asked: int = 0
    per_question: str = ""     # doc, strict-match outcome, extracted, finish_reason: one line each
    hang: Spread | None = None
    scored: int = 0
    fillers: str = ""          # the fillers, described
    fillers_answered: int = 0
    blind: str = ""


def run_under_load(rack: Rack, server: Served) -> UnderLoadRead:
    """The quick gate's questions (its order, accuracy.under_load_questions of them) asked at a fixed
    concurrency while fillers keep every rank full (under_load_per_rank each; attached without a rack
    file, under_load_fillers_attached spread by the server)."""
    cfg, per_rank = rack.accuracy, server.per_rank
    try:
        task = setup.task_for(cfg)
    except (TaskError, DataError) as e:
        return UnderLoadRead(blind=str(e))
    docs = quick.question_order(len(task), cfg.quick_seed)[:cfg.under_load_questions]
    pre = _preflight(per_rank)
    if pre.hang() or pre.nothing_back():
        return UnderLoadRead(pre)
    clients = setup.clients_for(rack, server.url, server.client.model)
    ranks = len(rank_table(rack))  # 0: attached without a rack file, the DP size unknown
    fillers = under_load.Fillers(clients, cfg.under_load_per_rank * ranks if ranks else cfg.under_load_fillers_attached,
                                 lambda i: load.prompt(cfg.under_load_filler_words, i), cfg.under_load_max_tokens,
                                 cfg.request_timeout_s, per_rank.rank_of)  # the fillers on the ranks in turn, where hinted
    rank_of = {doc: per_rank.rank_of(i) for i, doc in enumerate(docs)}  # the ranks in turn, where hinted
    hung: quick.QuickHang | None = None
    items = []
    try:
        items = list(quick.ask(task, clients, docs, cfg.num_concurrent, cfg.request_timeout_s,
                               under_load.Fixed(cfg.num_concurrent, cfg.request_timeout_s), rank_of.get,
                               hang=per_rank.hang))
    except quick.QuickHang as e:
        hung = e
    finally:
        fillers.stop(wait=hung is None)  # after a hang the fillers' requests end at their own bound
    if hung is not None:
        return UnderLoadRead(pre, hang=per_rank.read(hung.fanned), scored=hung.scored, fillers=fillers.describe(),
                             fillers_answered=fillers.answered, blind=str(hung))
    return UnderLoadRead(pre, sum(1 for it in items if it.strict.outcome is Outcome.CORRECT), len(items),
                         quick.per_question(items), fillers=fillers.describe(), fillers_answered=fillers.answered)


# --- ACC-GSM8K -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FullRead:
    """lm-eval's run as the watch saw it: the command (`command`, `limit`), every rank asked once
    before it (`pre`); a mid-run look that found a rank not answering (`stalled`:
    what lm-eval's progress showed, `look`: that look), or lm-eval's own request timing out while
    every rank answered the look (`late`); the run's log (`tail`) and results;
    why it could not look (`blind`)."""
    command: str = ""
    limit: int = 0
    pre: Spread | None = None
    stalled: str = ""
    look: Spread | None = None # the mid-run look: every rank asked once (a Spread: its hang, its slowest answer)
    late: str = ""             # lm-eval's own request timed out while every rank answered the look
    unanswered: str = ""       # "k of n" questions lm-eval had not answered then
    tail: str = ""
    results: Results | None = None
    blind: str = ""


class _Ended(Exception):
    """The watch ends lm-eval: what it saw is recorded in `read`."""

    def __init__(self, read: FullRead):
        super().__init__("ended by the watch")
        self.read = read


def run_lm_eval(rack: Rack, server: Served, say: Say) -> FullRead:
    """lm-eval on the server (the runbook's command, lmeval.plan), every rank asked once first, under
    the `Stall` watch; its results read from its output directory."""
    cfg, per_rank = rack.accuracy, server.per_rank
    key = rack.server.api_key.get_secret_value() if rack.server.api_key else None
    try:
        out = lmeval.new_run_dir(cfg.output_dir)
        plan = lmeval.plan(cfg, server.url, server.client.model, out, cfg.full_limit, key)
    except (DataError, CouldNotObserve) as e:
        return FullRead(limit=cfg.full_limit, blind=str(e))
    pre = _preflight(per_rank)
    read = FullRead(plan.shown(), cfg.full_limit, pre)
    if pre.hang() or pre.nothing_back():
        return read
    try:
        run = lmeval.execute(plan, cfg.full_timeout_s, say, cfg.progress_every_s, watch=_watch(per_rank, read, say))
    except _Ended as e:
        return e.read
    except lmeval.LmEvalError as e:
        return _with(read, blind=str(e))
    read = _with(read, tail=run.tail(40))
    if run.rc != 0:
        return _with(read, blind=f"lm_eval exited {run.rc} after {run.seconds:.0f}s: {run.last_error()} "
                                 f"(log: {run.log_path})")
    try:
        return _with(read, results=lmeval.read_outputs(out, plan.task))
    except lmeval.ResultsError as e:
        return _with(read, blind=str(e))


def _with(read: FullRead, **kw: Any) -> FullRead:
    return dataclasses.replace(read, **kw)


def _watch(per_rank: PerRank, read: FullRead, say: Say, clock: Callable[[], float] = time.monotonic) -> lmeval.Watch:
    """lm-eval's progress under the hang rule: on a stall past the bound, or a request of its that
    timed out after others came back, every rank is asked: a rank that does not answer, or nothing
    back, or lm-eval's own timeout while every rank answered, ends lm-eval (`_Ended`, recorded);
    a stall with every rank answering is a long answer, waited for (said)."""
    stall = lmeval.Stall(per_rank.hang.floor_s, per_rank.hang.factor)
    looked_at = [""]

    def watch(progress: tuple[int, int] | None, log_text: str, elapsed: float) -> None:
        now = clock()
        stalled = stall.seen(progress, now)
        late = lmeval.timed_out(log_text) if progress and progress[0] else ""
        if stalled is None and (not late or late == looked_at[0]):
            return
        done, total = progress or (0, 0)
        seen = (f"lm_eval: {done} of {total} questions answered, then " +
                (f"none for {stalled:.0f}s (the bound: max({stall.floor_s:g}s, {stall.factor:g} x the longest wait "
                 f"between its answers, {stall.longest_s:.0f}s))" if stalled is not None else
                 f"a request of its timed out ({late})"))
        look = _preflight(per_rank)
        if look.hang() or look.nothing_back():
            raise _Ended(_with(read, stalled=seen, look=look, blind=look.nothing_back() or ""))
        stall.looked(now)
        if late and late != looked_at[0]:
            looked_at[0] = late
            raise _Ended(_with(read, stalled=seen, look=look, late=late, unanswered=f"{total - done} of {total}"))
        say(f"ACC-GSM8K: {seen}; every rank answered a short request within {look.slowest_s:.1f}s: a long answer, "
            "waited for")
    return watch
