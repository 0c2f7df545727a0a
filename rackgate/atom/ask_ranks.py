"""Ask every DP rank the same prompts, non-streamed, with logprobs: SRV-GOLDEN's one call.

`ask(client, asks, ...)` is the one place SRV-GOLDEN sends requests: each `fanout.Ask` (a prompt
and ATOM's data_parallel_rank hint, or None: the server spreads it) goes out as one greedy
/v1/completions request, at most `concurrency` at once (threads, a client each), and comes back
as the choice the server returned, or the error. It reuses SRV-SANITY's fan-out types and its
test of the hint (`fanout.takes_rank_hint`); it is a function of its own because the fan-out
streams (the streamed chunks' logprobs are not assembled), and a golden answer needs the whole
non-streamed choice with its logprobs. Every wait is bounded by `timeout` per request.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from .client import Client, ServerError, refusal
from .fanout import Ask, _client_like


@dataclass
class Asked:
    ask: Ask
    choice: dict[str, Any] | None = None   # the first choice of a 200 answer
    error: str | None = None
    seconds: float = 0.0


def ask(client: Client, asks: list[Ask], max_tokens: int, logprobs: int | None, timeout: float,
        concurrency: int) -> list[Asked]:
    """Every ask as one greedy completion (temperature 0), at most `concurrency` in flight; the
    answers in the order asked. logprobs None: the field is not sent."""
    out = [Asked(a) for a in asks]
    todo = iter(range(len(asks)))
    lock = threading.Lock()

    def worker() -> None:
        c = _client_like(client)
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            got, a, t0 = out[i], asks[i], time.monotonic()
            extra: dict[str, Any] = {} if logprobs is None else {"logprobs": logprobs}
            if a.rank is not None:
                extra["data_parallel_rank"] = a.rank
            try:
                r = c.completion(a.prompt, max_tokens=max_tokens, temperature=0.0, timeout=timeout, **extra)
                choices = r.body.get("choices") if r.status == 200 else None
                if r.status != 200:
                    got.error = refusal(r)
                elif not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                    got.error = f"HTTP 200 without choices: {str(r.body)[:160]}"
                else:
                    got.choice = choices[0]
            except ServerError as e:
                got.error = str(e)
            got.seconds = time.monotonic() - t0

    threads = [threading.Thread(target=worker, daemon=True, name=f"ask-ranks-{k}")
               for k in range(max(1, min(concurrency, len(asks))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()  # each request is bounded by `timeout` (the client's), so each thread ends
    return out
