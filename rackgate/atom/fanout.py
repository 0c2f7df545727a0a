"""Many requests at once, spread over the DP ranks; stop at the first decisive one, or at a hang.

Every request goes out at the same moment (one thread each), streamed unless asked otherwise and
read until `stop_when` calls its text decided (a '!' stream is cut after a few characters: the
server stops generating for it). When one answer is decisive (`decisive`), the others get
`settle_s` to come back, then every request still out is cancelled: the first degenerate answer
decides, the answers back by then give the share. The settle window is at least as long as the
first decisive answer took (so that on a loaded machine the longer coherent answers come back too),
and with a hang rule, while a rank asked by the hint has not answered, it stays open until one
answer that is not decisive is back (at most the rule's floor): a share read from one rank's
decisive answers alone would blame the whole server. Once every rank asked has answered, the settle
window ends it: the verdict is certain, and the share is the answers back, saying how many were
still in flight (issue 50). With the ranks not known (no hint) the window stays open for an answer
that is not decisive as before: a fast broken engine's first '!' alone would read as the whole
server's (selftest/realengine/test_partly_broken.py's broken engine of three).

A hang is read here, not waited out: once some requests have come back, those still out with
nothing of them moving (no headers, no streamed chunk) for `HangRule.bound(slowest)` --
max(floor_s, factor x the slowest answer back) -- are hung (`Fanned.hung`) and cancelled; a long
answer still streaming is slow, not hung (the read waits for it). A rank that is slower than the others but
answers within that bound is not hung (`Fanned.slowest_s` says how slow). Nothing back at all is
not a hang: the request timeout ends that read, and the caller could not observe.

Routing: ATOM's API server hands each request to a DP rank by load (CoreManager's
`least_requests`, ties by a rotating cursor; `--dp-load-balance round_robin` rotates), and a
request may name its rank (`data_parallel_rank`, validated against the engine count). The
response does not name the rank, and the log line of an add (`CoreManager: add rank3: 1 req / 12
tok | in-flight reqs=[...]`) names no request: only the hint attributes an answer to a rank.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..errors import ServerBrokeLimit
from ..server_access import Ask, Fanned, Got, HangRule
from .client import Client, ServerError, StreamHandle, refusal

__all__ = ["Ask", "Fanned", "Got", "HangRule", "fan_out", "takes_rank_hint"]   # the values: rackgate.server_access

COMPLETIONS, CHAT = "/v1/completions", "/v1/chat/completions"


def takes_rank_hint(client: Client, ranks: int, timeout: float) -> tuple[bool, str]:
    """Whether routing by ATOM's data_parallel_rank is worth it and taken, and why not: more than
    one rank, and the server does not refuse the field (transformers serve: HTTP 422 "Unexpected
    fields in the request: {'data_parallel_rank'}"). One request of one token to every rank at
    once; the first answer decides (a hung rank does not hold the decision up). Nothing back says
    nothing about the field: the hint is kept, and the checks that follow will see."""
    if ranks < 2:
        return False, "one DP rank: every request lands on it"
    asks = [Ask("The capital of France is", r) for r in range(ranks)]
    out = fan_out(client, asks, 1, timeout, stream=False, decisive=lambda g: g.replied, settle_s=0.0,
                  settle_as_long=False)
    for g in out.got:
        if g.error and g.status in (400, 422) and "data_parallel_rank" in g.error:
            return False, (f"the server refused ATOM's data_parallel_rank routing hint ({g.error[:160]}): "
                           "requests are spread over the server without it, and no answer is attributed to a rank")
    return True, ""


def _client_like(client: Client) -> Client:
    """A client of its own for a thread (a requests.Session is not shared across threads)."""
    c = Client(client.base_url, client.model, client.timeout)
    c.session.headers.update(client.session.headers)
    return c


def request_body(client: Client, a: Ask, max_tokens: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": client.model, "max_tokens": max_tokens, "temperature": 0.0, **(extra or {}),
                            **dict(a.params)}
    if a.chat:
        body["messages"] = [{"role": "user", "content": a.prompt}]
    else:
        body["prompt"] = a.prompt
    if a.rank is not None:
        body["data_parallel_rank"] = a.rank
    return body


def _read(g: Got, status: int, body: dict[str, Any]) -> None:
    g.status, g.replied, g.body = status, True, body
    if status != 200:
        g.error = refusal_of(status, body)
        return
    c = (body.get("choices") or [{}])[0]
    msg = c.get("message") or {}
    g.text = (c.get("text") or "") if "message" not in c else (msg.get("content") or "")
    g.reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    g.finish, g.stopped = c.get("finish_reason"), body.get("stopped")
    g.tokens = (body.get("usage") or {}).get("completion_tokens")


def refusal_of(status: int, body: dict[str, Any]) -> str:
    from .client import Reply
    return refusal(Reply(status, body, 0.0, {}))


def fan_out(client: Client, asks: list[Ask], max_tokens: int, timeout: float,
            stop_when: Callable[[str], str | None] | None = None,
            decisive: Callable[[Got], bool] = lambda g: False, settle_s: float = 2.0, *,
            hang: HangRule | None = None, stream: bool = True, extra: dict[str, Any] | None = None,
            stop: Callable[[], bool] | None = None, settle_as_long: bool = True) -> Fanned:
    """Send every ask at once (one thread each), streamed unless `stream` is False; return when
    all are back, or after the first decisive answer once settle_s (and, with settle_as_long, as
    long again as it took) has passed, or when `stop()` says so (asked about every half second),
    or -- with a `hang` rule -- when the requests still out have been out past its bound while
    others came back (those are `hung`), or at `timeout`. Whatever is still out is cancelled."""
    t0 = time.monotonic()
    results: dict[int, Got] = {}
    handles = [StreamHandle() for _ in asks]
    changed = threading.Condition(threading.Lock())

    def one(i: int) -> None:
        a = asks[i]
        body = request_body(client, a, max_tokens, extra)
        g = Got(a)
        t = time.monotonic()
        try:
            c = _client_like(client)
            if stream:
                r = c.stream(CHAT if a.chat else COMPLETIONS, body, timeout=timeout, handle=handles[i],
                             stop_when=stop_when)
            else:
                r = c.request("POST", CHAT if a.chat else COMPLETIONS, body, timeout=timeout)
            _read(g, r.status, r.body)
        except ServerError as e:
            g.error = str(e)
        except ServerBrokeLimit as e:   # the server answered, past what the request allows: evidence
            g.error, g.broke, g.replied = str(e), e, True
        g.seconds = time.monotonic() - t
        with changed:
            if not handles[i].cancelled:
                results[i] = g
            changed.notify_all()

    for i in range(len(asks)):
        threading.Thread(target=one, args=(i,), daemon=True, name=f"fanout-{i}").start()
    end = t0 + timeout + 5.0
    ranks = {a.rank for a in asks}
    ranked = None not in ranks
    settling, hang_hit = False, False
    settled = until = end  # settling: the window's end, and how long it waits for an answer that is not decisive
    with changed:
        while len(results) < len(asks) and time.monotonic() < end:
            now = time.monotonic()
            if not settling and any(decisive(g) for g in results.values()):
                settling = True
                settled = min(end, now + (max(settle_s, now - t0) if settle_as_long else settle_s))
                # the share needs an answer to compare with: a window closed before any answer but
                # the decisive ones came back would read one rank's answers as the whole server's
                until = min(end, max(settled, now + hang.floor_s)) if hang is not None else settled
            if settling:
                other = any(g.replied and not g.error and not decisive(g) for g in results.values())
                # a decisive answer is positive evidence: the verdict is certain, and the window waits
                # past the settle window (for an answer that is not decisive, up to the hang floor) only
                # while an answer still out could change the share's reading: a rank asked by the hint
                # that has not answered yet. Every rank answered (each rank's reading is its own): the
                # settle window ends it. The ranks not known: an answer still out may be another
                # rank's coherent one, so the window waits for one as before (the one-rank-of-many
                # diagnosis rests on it).
                known = ranked and ranks <= {g.ask.rank for g in results.values() if g.replied}
                if now >= (settled if other or known else until):
                    break
            back = [g.seconds for g in results.values() if g.replied]
            if hang is not None and back and not settling:
                # a request is hung when nothing of it moved (no headers, no chunk) for the bound:
                # a long answer that is still streaming is slow, not hung
                bound = hang.bound(max(back))
                if all(now >= max(t0, handles[i].progress or t0) + bound for i in range(len(asks)) if i not in results):
                    hang_hit = True
                    break
            if stop is not None and stop():
                break
            changed.wait(max(0.05, min(0.5, end - now)))
        for i, h in enumerate(handles):
            if i not in results:
                h.cancel()
        got = [results[i] for i in sorted(results)]
        out_ = [asks[i] for i in range(len(asks)) if i not in results]
    back_s = [g.seconds for g in got if g.replied]
    slowest = max(back_s, default=0.0)
    is_hang = hang_hit
    # requests that timed out on their own bound while others came back are hung as well
    timed_out = [g for g in got if not g.replied and g.error and "no answer within" in g.error] if hang else []
    if hang is not None and back_s and timed_out and not settling:
        is_hang = True
        got = [g for g in got if g not in timed_out]
        out_ += [g.ask for g in timed_out]
    return Fanned(got, len(asks), len(asks) - len(got), time.monotonic() - t0,
                  hung=out_ if is_hang else [], bound_s=hang.bound(slowest) if is_hang and hang else None,
                  slowest_s=slowest)
