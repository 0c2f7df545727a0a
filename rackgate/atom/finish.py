"""finish_reason, as ATOM's routes report it, in one vocabulary.

The engine's own reasons (scheduler.py): "eos", "stop_sequence", "stop_<token id>",
"max_tokens", "aborted". What a client sees depends on the route (current ATOM main):
- /v1/completions passes the engine's reason through ("max_tokens", "eos", "stop_163586");
- /v1/chat/completions normalizes (_normalize_finish_reason: max_tokens -> length, stop* -> stop);
- streaming chat ends every stream with "stop" (or "tool_calls"), whatever the engine said, so a
  streamed "stop" does not prove the budget sufficed.
The runbook's image answers OpenAI's "stop"/"length" on both routes.
"""
from __future__ import annotations

LENGTH = {"length", "max_tokens", "max_new_tokens"}


def normalize(reason: str | None) -> str | None:
    """'stop', 'length', 'tool_calls', 'aborted' or None (still running / not reported)."""
    if reason is None:
        return None
    if reason in LENGTH:
        return "length"
    if reason in ("tool_calls", "aborted"):
        return reason
    return "stop"  # eos, stop_sequence, stop_<id>, stop


def trustworthy(route: str, streamed: bool) -> bool:
    """Whether a 'stop' from this route can be told apart from running out of tokens."""
    return not (streamed and route.endswith("chat/completions"))
