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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .sanity import degenerate


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
