"""Nodes that stopped answering (issue 52): once ssh could not reach a node (its own failure, rc 255:
unreachable, the connection gone), the node's next commands say so at once instead of each waiting
out its own ssh timeout -- a node whose link was cut halfway through a run made each of its remaining
items wait ConnectTimeout and more. The node is tried again on a bounded schedule (RETRY_S: 10 s after
the first failure, then 20, 40, 60, 60, ...): a node that comes back is asked, and judged, again; one
answer clears it.

Keyed by the ssh target (user@host): every Host of a node shares it. The clock is `now` (a self-test
moves it)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

RETRY_S = (10.0, 20.0, 40.0, 60.0)

now = time.monotonic


@dataclass
class Down:
    since: float       # when it first failed
    why: str           # what ssh said the first time
    tries: int         # real attempts that failed
    next_try: float    # not asked again before this


_DOWN: dict[str, Down] = {}
_LOCK = threading.Lock()


def check(target: str) -> str | None:
    """None: ask the node. Else the line that says it stopped answering (not asked now)."""
    with _LOCK:
        d = _DOWN.get(target)
        t = now()
        if d is None or t >= d.next_try:
            return None
        return (f"stopped answering {t - d.since:.0f}s ago ({d.why}); not asked again for {d.next_try - t:.0f}s "
                f"(tried {d.tries} time(s); re-tried after {', '.join(f'{s:g}' for s in RETRY_S)} s, then every "
                f"{RETRY_S[-1]:g} s)")


def failed(target: str, why: str) -> None:
    """A real attempt failed as ssh's own failure: (still) down, the next try further off."""
    with _LOCK:
        t = now()
        d = _DOWN.get(target)
        if d is None:
            d = _DOWN[target] = Down(t, why[:200], 0, t)
        d.tries += 1
        d.next_try = t + RETRY_S[min(d.tries, len(RETRY_S)) - 1]


def answered(target: str) -> None:
    """The node answered: it is back."""
    with _LOCK:
        _DOWN.pop(target, None)


def forget() -> None:
    """Every node as new (a session's start)."""
    with _LOCK:
        _DOWN.clear()
