"""Every read from a model server is bounded in size and time (issue 52).

The size an answer may have follows from the request: `max_tokens` (or `max_completion_tokens`)
tokens, each at most BYTES_PER_TOKEN bytes on the wire -- generous: a streamed chunk is one token's
text (at most a few dozen bytes, JSON-escaped: 6 bytes a UTF-16 unit) in an envelope of ~300 bytes
(id, object, created, model, choices) and, with logprobs, its top alternatives --, plus the request
itself echoed (`echo`, `prompt_logprobs`: PROMPT_FACTOR bytes a byte of the request) and BASE_BYTES
(headers, usage, a last chunk). Never more than CEILING_BYTES, whatever max_tokens says. A request
without max_tokens (GET /v1/models, a health probe) gets BASE_BYTES.

Past the size, the read stops, the connection is closed and the answer is positive evidence about
the server (errors.ServerBrokeLimit): a body larger than any answer to this request could be. A
stream that sends more pieces of text than the request's max_tokens (STREAM_SLACK more, for a
server that splits a token's text) likewise: the server broke the request's own limit. The time an
answer may take is the request's timeout, over the whole answer, not a read at a time: a server
that trickles a byte at a time ends at it (could not observe, one line).
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from ..errors import ServerBrokeLimit

BYTES_PER_TOKEN = 4096
PROMPT_FACTOR = 16
BASE_BYTES = 1 << 20          # 1 MiB
CEILING_BYTES = 256 << 20     # 256 MiB: no answer is read past this
STREAM_SLACK = 16
# what such an answer means, for the finding (rackgate/fixtures/server.py settle, hooks/outcome.py)
MEANS = ("the server sent more than any answer to this request can be -- text past the request's max_tokens, or a "
         "body past the bound max_tokens sets (rackgate/atom/bounded.py): it does not enforce the request's limit "
         "(a runaway generation), or a proxy between rackgate and it corrupts answers")
READ_CHUNK = 1 << 16


def max_tokens(body: dict[str, Any] | None) -> int | None:
    """The request's own limit on the answer's tokens (None: it sets none)."""
    for key in ("max_tokens", "max_completion_tokens"):
        v = (body or {}).get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return None


def answer_bytes(body: dict[str, Any] | None) -> int:
    """The most bytes any answer to this request can take on the wire."""
    n = max_tokens(body)
    if n is None:
        return BASE_BYTES
    asked = len(json.dumps(body)) if body else 0
    return min(CEILING_BYTES, BASE_BYTES + n * BYTES_PER_TOKEN + asked * PROMPT_FACTOR)


def mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def too_large(where: str, read: int, limit: int, body: dict[str, Any] | None) -> ServerBrokeLimit:
    n = max_tokens(body)
    why = (f"max_tokens={n} x {BYTES_PER_TOKEN} bytes a token + {mib(BASE_BYTES)}" if n is not None
           else f"{mib(BASE_BYTES)} for an answer without max_tokens")
    return ServerBrokeLimit(where, f"the answer was larger than any answer to this request could be: more than "
                                   f"{mib(limit)} read ({mib(read)} when the read stopped; the bound is {why}, at most "
                                   f"{mib(CEILING_BYTES)}); the read stopped and the connection was closed -- a "
                                   "runaway generation or a broken proxy")


def past_max_tokens(where: str, pieces: int, body: dict[str, Any] | None) -> ServerBrokeLimit:
    return ServerBrokeLimit(where, f"the stream ran past the request's max_tokens: {pieces} pieces of text read "
                                   f"for max_tokens={max_tokens(body)} (each piece at least one token); the read "
                                   "stopped and the connection was closed -- the server does not enforce max_tokens")


class Budget:
    """The bytes and the time one answer may take: count() each piece read, raising at the bound.
    Time: `late()` says whether the whole answer's time is up (the caller raises its own line)."""

    def __init__(self, where: str, body: dict[str, Any] | None, timeout_s: float):
        self.where, self.body = where, body
        self.limit, self.read = answer_bytes(body), 0
        self.t0, self.timeout_s = time.monotonic(), timeout_s

    def count(self, n: int) -> None:
        self.read += n
        if self.read > self.limit:
            raise too_large(self.where, self.read, self.limit, self.body)

    def late(self) -> bool:
        return time.monotonic() - self.t0 > self.timeout_s

    def pieces(self, n: int) -> None:
        """n pieces of text streamed so far: past max_tokens (and the slack) the server broke the limit."""
        cap = max_tokens(self.body)
        if cap is not None and n > cap + STREAM_SLACK:
            raise past_max_tokens(self.where, n, self.body)


def chunks(resp: Any, budget: Budget) -> Iterator[bytes]:
    """A response's body as it arrives, counted against the budget (decoded content: a compressed
    body is bounded by what it decompresses to)."""
    for chunk in resp.iter_content(READ_CHUNK):
        budget.count(len(chunk))
        yield chunk
        if budget.late():
            return
