"""Load on the server: concurrent completions, every one bounded, with an early stop.

The serving checks that load the server (SRV-LONGCTX, SRV-DEADLOCK) and the per-rank liveness ask
(after a load) call this; tests only wire it to a judge. Workers are daemon threads: a request the
server never answers (a stuck rank) is bounded by its own timeout and never holds up the caller or
the interpreter's exit after the caller has its answer.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from .client import Client, ServerError, refusal

WORDS = ("river", "stone", "cloud", "north", "glass", "field", "seven", "amber")


def prompt(words: int, seed: int) -> str:
    """A deterministic prompt of about `words` tokens."""
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(words)) + "\nSummarize the text above."


@dataclass
class LoadOutcome:
    sent: int
    problems: list[str] = field(default_factory=list)   # one line per request that answered non-200 or failed
    pending: int = 0                                      # requests with no answer: still out, or past their bound
    stopped_early: bool = False                           # `stop` said so before every request answered
    seconds: float = 0.0
    degenerate: list[str] = field(default_factory=list)   # one line per answer that is not language ('!!!')

    @property
    def completed(self) -> int:
        return self.sent - self.pending


def send_all(client: Client, prompts: list[str], max_tokens: int, timeout: float, concurrency: int,
             ranks: list[int] | None = None, stop: Callable[[], bool] | None = None,
             poll_s: float = 1.0, *, degenerate: Callable[[str], str | None],
             degenerate_so_far: Callable[[str], str | None]) -> LoadOutcome:
    """Send every prompt (routed to ranks[i] when given), `concurrency` at a time, each bounded by
    `timeout`. Returns when every request has answered, or when `stop()` (asked every poll_s while
    requests are outstanding) returns True, or at `timeout` after the last request was sent, or
    as soon as one answer is degenerate (`degenerate` names it: the check decides on it). The two
    judges are the caller's (rackgate.gates.sanity): the load does not judge."""
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(prompts)):
        todo.put(i)
    lock = threading.Lock()
    results: dict[int, tuple[str, bool]] = {}
    bad: dict[int, str] = {}
    done = threading.Event()

    def one(i: int) -> tuple[str, bool]:
        """(what went wrong, no answer at all within the bound). Streamed, and cut the moment the
        answer is degenerate (a '!' rank is named at once, not waited out)."""
        body: dict[str, object] = {"model": client.model, "prompt": prompts[i], "max_tokens": max_tokens, "temperature": 0.0}
        if ranks:
            body["data_parallel_rank"] = ranks[i]
        who = f"dp{ranks[i]}: " if ranks else ""
        try:
            r = client.stream("/v1/completions", body, timeout=timeout, stop_when=degenerate_so_far)
        except ServerError as e:
            return who + str(e), "no answer within" in str(e)
        if r.status != 200:
            return refusal(r), False
        text = ((r.body.get("choices") or [{}])[0].get("text")) or ""
        why = r.body.get("stopped") or degenerate(text)
        if why:
            with lock:
                bad[i] = f"{who}{text[:40]!r}: {why}"
        return "", False

    def worker() -> None:
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            out = one(i)
            with lock:
                results[i] = out
                if len(results) == len(prompts):
                    done.set()

    t0 = time.monotonic()
    if not prompts:
        return LoadOutcome(0)
    for k in range(min(concurrency, len(prompts))):
        threading.Thread(target=worker, name=f"load-{k}", daemon=True).start()
    # Every request is bounded by `timeout`; the last one starts at most ceil(n/c)-1 rounds later.
    rounds = -(-len(prompts) // max(1, concurrency))
    deadline = t0 + timeout * rounds + 5.0
    stopped = False
    while not done.wait(poll_s):
        with lock:
            decided = bool(bad)
        if decided or (stop is not None and stop()):
            stopped = True
            break
        if time.monotonic() >= deadline:
            break
    with lock:
        got = dict(results)
        degenerate_ = [bad[i] for i in sorted(bad)]
    problems = [msg for i, (msg, hung) in sorted(got.items()) if msg and not hung]
    pending = len(prompts) - len(got) + sum(1 for msg, hung in got.values() if hung)
    return LoadOutcome(len(prompts), problems, pending, stopped, time.monotonic() - t0, degenerate_)


def ranks_alive(client: Client, table: dict[int, str], timeout: float, concurrency: int = 16) -> dict[int, tuple[str, bool]]:
    """One short completion routed to each DP rank. {rank: (what went wrong, unreachable)} for
    those that did not answer 200 (unreachable: no answer at all, not a refusal); empty when every
    rank answered."""
    results: dict[int, tuple[str, bool]] = {}
    ranks = list(table)
    lock = threading.Lock()
    todo: queue.Queue[int] = queue.Queue()
    for r in ranks:
        todo.put(r)

    def worker() -> None:
        while True:
            try:
                r = todo.get_nowait()
            except queue.Empty:
                return
            try:
                rep = client.completion("The capital of France is", max_tokens=4, timeout=timeout,
                                        data_parallel_rank=r)
                res = ("", False) if rep.status == 200 else (refusal(rep), False)
            except ServerError as e:
                res = (str(e), True)
            with lock:
                results[r] = res
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(concurrency, len(ranks)))]
    for t in threads:
        t.start()
    rounds = -(-len(ranks) // max(1, concurrency))
    end = time.monotonic() + timeout * rounds + 5.0
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    with lock:
        got = dict(results)
    out: dict[int, tuple[str, bool]] = {}
    for r in ranks:
        msg, dead = got.get(r, (f"no answer within {timeout:g}s", True))
        if msg:
            out[r] = (f"{table[r]}/dp{r}: {msg}", dead)
    return out
