"""ACC-BUDGET: does the gate's max_tokens leave room for the answer after the reasoning?"""
from __future__ import annotations


def judge(choice: dict) -> str | None:
    """A chat choice -> why the budget is too small, or None."""
    msg = choice.get("message") or {}
    content = msg.get("content") or ""
    reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    finish = choice.get("finish_reason")
    if content.strip() and finish == "stop":
        return None
    return (f"content={content[:60]!r} finish_reason={finish!r} "
            f"reasoning_content={'set (' + str(len(reasoning)) + ' chars)' if reasoning else 'empty'}")
