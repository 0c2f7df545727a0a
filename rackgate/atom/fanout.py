"""Many short streamed completions at once, spread over the DP ranks; stop at the first decisive one.

SRV-SANITY's read: every prompt goes out at the same moment, each streamed with a small
max_tokens and read until `stop_when` calls its text decided (a '!' stream is cut after a few
characters, the server stops generating for it). When one answer is decisive (`decisive`), the
others get `settle_s` to come back, then every request still out is cancelled: the first
degenerate answer decides, the answers back by then give the share. The settle window is at least
as long as the first decisive answer took (so that on a loaded machine the coherent answers,
which are longer, can come back too), at most `settle_s` more when that is longer.

Routing: ATOM's API server hands each request to a DP rank by load (CoreManager's
`least_requests`, ties by a rotating cursor; `--dp-load-balance round_robin` rotates), and a
request may name its rank (`data_parallel_rank`, validated against the engine count). The
response does not name the rank, and the log line of an add (`CoreManager: add rank3: 1 req / 12
tok | in-flight reqs=[...]`) names no request: only the hint attributes an answer to a rank.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from .client import Client, ServerError, StreamHandle, refusal


@dataclass(frozen=True)
class Ask:
    prompt: str
    rank: int | None = None  # ATOM's data_parallel_rank hint (None: the server picks)


@dataclass
class Got:
    ask: Ask
    text: str = ""
    finish: str | None = None
    stopped: str | None = None   # stop_when's reason: the stream was cut there
    error: str | None = None     # the request failed or was refused (what came back)
    status: int = 200
    seconds: float = 0.0


@dataclass
class Fanned:
    got: list[Got]       # the answers back, in the order asked
    asked: int
    cancelled: int       # requests still out when the read ended (cancelled)
    seconds: float


def takes_rank_hint(client: Client, ranks: int, timeout: float) -> bool:
    """Whether routing by ATOM's data_parallel_rank is worth it and taken: more than one rank, and
    the server does not refuse the field (transformers serve: HTTP 422 "Unexpected fields in the
    request: {'data_parallel_rank'}"). One request of one token."""
    if ranks < 2:
        return False  # one rank: every request lands on it (ATOM does not even read the hint)
    try:
        r = client.completion("The capital of France is", max_tokens=1, timeout=timeout, data_parallel_rank=0)
    except ServerError:
        return True  # no answer says nothing about the field: the checks that follow will see
    return not (r.status in (400, 422) and "data_parallel_rank" in refusal(r))


def _client_like(client: Client) -> Client:
    """A client of its own for a thread (a requests.Session is not shared across threads)."""
    c = Client(client.base_url, client.model, client.timeout)
    c.session.headers.update(client.session.headers)
    return c


def fan_out(client: Client, asks: list[Ask], max_tokens: int, timeout: float,
            stop_when: Callable[[str], str | None] | None = None,
            decisive: Callable[[Got], bool] = lambda g: False, settle_s: float = 2.0) -> Fanned:
    """Send every ask at once (one thread each), streamed; return when all are back, or after the
    first decisive answer once max(settle_s, the time it took) has passed, or at `timeout` --
    whatever is still out is cancelled."""
    t0 = time.monotonic()
    lock = threading.Lock()
    results: dict[int, Got] = {}
    handles = [StreamHandle() for _ in asks]
    changed = threading.Condition(lock)

    def one(i: int) -> None:
        a = asks[i]
        body = {"model": client.model, "prompt": a.prompt, "max_tokens": max_tokens, "temperature": 0.0}
        if a.rank is not None:
            body["data_parallel_rank"] = a.rank
        g = Got(a)
        t = time.monotonic()
        try:
            r = _client_like(client).stream("/v1/completions", body, timeout=timeout, handle=handles[i],
                                             stop_when=stop_when)
            g.status = r.status
            if r.status != 200:
                g.error = refusal(r)
            else:
                c = (r.body.get("choices") or [{}])[0]
                g.text, g.finish, g.stopped = c.get("text") or "", c.get("finish_reason"), r.body.get("stopped")
        except ServerError as e:
            g.error = str(e)
        g.seconds = time.monotonic() - t
        with changed:
            if not handles[i].cancelled:
                results[i] = g
            changed.notify_all()

    for i in range(len(asks)):
        threading.Thread(target=one, args=(i,), daemon=True, name=f"fanout-{i}").start()
    end = t0 + timeout + 5.0
    settling = False
    with changed:
        while len(results) < len(asks) and time.monotonic() < end:
            if not settling and any(decisive(g) for g in results.values()):
                settling, now = True, time.monotonic()
                end = min(end, now + max(settle_s, now - t0))
            changed.wait(max(0.0, min(0.5, end - time.monotonic())))
        for i, h in enumerate(handles):
            if i not in results:
                h.cancel()
        got = [results[i] for i in sorted(results)]
    return Fanned(got, len(asks), len(asks) - len(got), time.monotonic() - t0)
