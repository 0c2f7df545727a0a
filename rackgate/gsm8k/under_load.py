"""ACC-UNDER-LOAD (MLPerf TEST01): GSM8K questions asked while the server is kept full, scored
as the quick gate scores them, and their accuracy compared with the quick gate's.

The quick gate ramps its concurrency only while latency holds, so a fault that shows only in full
batches (numerics that depend on batch size, a rank that breaks under load) does not reach it.
Here filler completions keep the server full for as long as the questions run; the questions go
at their own fixed concurrency (never ramped down). Agreement: the accuracy under load may fall
below the quick gate's by at most z standard errors of the difference of two proportions
(gates/accuracy.py `Agreement`, the judgment)."""
from __future__ import annotations

import threading
from collections.abc import Callable

from ..atom.client import ServerError
from . import quick


class Fixed(quick.Pace):
    """The quick gate's pace held at its maximum: no ramp, no back-off."""

    def __init__(self, n: int, bound_s: float | None):
        super().__init__(n, bound_s, in_flight=n, peak=n)

    def answered(self, seconds: float, tokens: int) -> None:
        if self.first_s is None:
            self.first_s, self.first_per_token_s = seconds, seconds / max(1, tokens)


class Fillers:
    """`n` threads, each sending completions back to back until stop(); every request bounded."""

    def __init__(self, client_factory: quick.ClientFactory, n: int, prompt_of: Callable[[int], str], max_tokens: int,
                 timeout: float, rank_of: Callable[[int], int | None] = lambda i: None):
        self.stop_flag = threading.Event()
        self.sent = self.answered = 0
        self.problems: list[str] = []
        self.lock = threading.Lock()
        self.timeout = timeout
        self.threads = [threading.Thread(target=self._run, args=(client_factory, prompt_of(i), max_tokens, rank_of(i)),
                                         daemon=True, name=f"filler-{i}") for i in range(n)]
        for t in self.threads:
            t.start()

    def _run(self, client_factory: quick.ClientFactory, prompt: str, max_tokens: int, rank: int | None) -> None:
        """Back to back; `rank`: ATOM's data_parallel_rank hint (the fillers on the ranks in turn)."""
        client = client_factory()
        hint = {} if rank is None else {"data_parallel_rank": rank}
        while not self.stop_flag.is_set():
            with self.lock:
                self.sent += 1
            try:
                r = client.completion(prompt, max_tokens=max_tokens, timeout=self.timeout, **hint)
                ok, why = r.status == 200, f"HTTP {r.status}"
            except ServerError as e:
                ok, why = False, str(e)
            with self.lock:
                self.answered += ok
                if not ok and len(self.problems) < 8:
                    self.problems.append(why[:160])

    def stop(self, wait: bool = True) -> None:
        """Stop sending; wait for the requests in flight, each within its own bound (wait=False:
        a hang was read, those requests end at their own bound in daemon threads)."""
        self.stop_flag.set()
        for t in self.threads if wait else ():
            t.join(self.timeout + 5)

    def describe(self) -> str:
        return (f"{len(self.threads)} filler streams, {self.sent} filler requests, {self.answered} answered"
                + (f"; problems: {'; '.join(self.problems[:3])}" if self.problems else ""))
