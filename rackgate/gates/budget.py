"""ACC-BUDGET: does the gate's max_tokens leave room for the answer after the reasoning?

Each reply gets one true diagnosis (`Judgement.kind`):
- "ok": an answer in content, finish_reason stop.
- "degenerate": content is not language ('!!!!', one token repeated): SRV-SANITY's finding, not
  a budget one -- the check defers to it (could not judge the budget).
- "budget": finish_reason length with no answer in content: the budget ran out (inside the
  reasoning when reasoning_content is set).
- "reasoning-parser": content empty, reasoning_content set, finish_reason stop: the model finished,
  its answer went to reasoning_content -- the reasoning parser or the chat template, not the budget.
- "other": anything else (said as it is).

The row (`budget_answers`, declared below: one item per server) asks every DP rank at once
(rackgate/probes/acc.py `budget`) and judges the answers as shares: "k of n answers without an
answer in content", naming the ranks and nodes they came from where the rank hint attributes them
(ACC-BUDGET [node3/dp9]), the whole server when every answer is short. One item, not one per rank:
the row must judge a server whose ranks cannot be told apart as well (attached without a rack file:
16 requests spread by the server; a server that refuses the hint), where a rank's item could only
say it could not observe.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import acc
from ..probes.degenerate import degenerate
from .declare import Check, Finding, Shown, declare
from .srv import DEADLOCK_SIGNATURE


@dataclass(frozen=True)
class Judgement:
    kind: str
    why: str = ""

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def _seen(content: str, finish: str | None, reasoning: str, tokens: int | None) -> str:
    n = f" after {tokens} tokens" if tokens is not None else ""
    return (f"content={content[:60]!r} finish_reason={finish!r}{n} "
            f"reasoning_content={'set (' + str(len(reasoning)) + ' chars)' if reasoning else 'empty'}")


def judge(choice: dict[str, Any], completion_tokens: int | None = None) -> Judgement:
    """A chat choice (and the reply's usage.completion_tokens, when given) -> its diagnosis."""
    msg = choice.get("message") or {}
    content = msg.get("content") or ""
    reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    finish = choice.get("finish_reason")
    seen = _seen(content, finish, reasoning, completion_tokens)
    if content.strip():
        bad = degenerate(content)
        if bad:
            return Judgement("degenerate", f"{seen}: {bad}")
        if finish == "stop":
            return Judgement("ok", seen)
    if finish == "length":
        where = "inside the reasoning" if reasoning else "before any answer"
        return Judgement("budget", f"{seen}: the budget ran out {where}")
    if finish == "stop" and not content.strip() and reasoning.strip():
        return Judgement("reasoning-parser", f"{seen}: the answer went to reasoning_content: the reasoning "
                                             "parser or chat template (not the budget: the model stopped by itself)")
    return Judgement("other", seen)


def _reply(g: Any) -> Judgement:
    """One streamed chat answer (rackgate.atom.fanout.Got) -> its diagnosis."""
    return judge({"message": {"content": g.text, "reasoning_content": g.reasoning}, "finish_reason": g.finish},
                 g.tokens)


def budget_answers(b: acc.Budget, rack: Rack, where: str) -> list[str]:
    """The budget leaves room for an answer in content on every rank. Read in this order: answers
    that are not language (SRV-SANITY's: the budget cannot be judged on them); requests in flight
    past the hang bound while others came back (SRV-DEADLOCK's); requests answered with an error
    while others were answered (this row's share; every one of them: could not observe); then the
    answers without an answer in content (this row's share)."""
    spread = b.spread
    broken = spread.share(lambda g: g.stopped or (_reply(g).why if not g.error and _reply(g).kind == "degenerate"
                                                  else None), "answers degenerate")
    if broken:
        return [Finding(f"ACC-BUDGET: {broken.line}; the budget cannot be judged on them", row="SRV-SANITY",
                        where=broken.where)]
    hang = spread.hang()
    if hang:
        said = f"; evidence: {b.stacks_said}" if b.stacks_said else ""
        return [Finding(f"ACC-BUDGET's requests: {hang}{said}{DEADLOCK_SIGNATURE}", row="SRV-DEADLOCK",
                        where=spread.hang_where(where))]
    refused = spread.failed()
    if refused and len(refused.bad) < len(spread.replied):
        return [Finding(refused.line, where=refused.where)]
    if refused:
        raise CouldNotObserve(f"POST /v1/chat/completions: {refused.bad[0].error}")
    short = spread.share(lambda g: None if _reply(g).ok else f"{_reply(g).kind}: {_reply(g).why}",
                         "answers without an answer in content")
    return [Finding(f"max_tokens={b.max_tokens}: {short.line}", where=short.where)] if short else []


def budget_shown(b: acc.Budget, rack: Rack) -> list[Shown]:
    out = [Shown("chat completions (streamed), all ranks", b.spread.evidence())]
    if b.spread.hang():
        out += [Shown(title, text) for title, text in b.stacks]
    return out


declare(Check("ACC-BUDGET", "server", probe=acc.budget, judge=budget_answers, shows=budget_shown))
