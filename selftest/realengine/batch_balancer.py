"""One DP rank in front of two `transformers serve` engines that answers from the second (a
perturbed copy: the noisy-layer weights) only under one batch condition, and otherwise from the
first: SRV-BATCH's fault on real engines (test_batch_engine.py). The condition is read from the
batch the balancer really forms, never from a marker in the request: a request waits until no other
has arrived for WINDOW_S (as an engine gathers the requests it steps together; a burst of requests
on a loaded machine arrives over more than one window), and its batch is every request in flight on
the rank then. A greedy request (no temperature) whose batch holds a request
setting `top_k` is answered by the perturbed copy -- ROCm/aiter #5192's shape: the sampler's path
for a batch that mixes top_k with plain requests corrupts the plain ones.

Over two healthy copies the same balancer is the healthy control (no condition moves an answer)."""
from __future__ import annotations

import threading
import time

from .balancer import Balancer

WINDOW_S = 0.5  # a batch is the requests that arrive with no gap this long between them
MOST_S = 5.0    # a request waits for its batch at most this long


class BatchBalancer(Balancer):
    """`with BatchBalancer(name, (url, model), (url, model)) as b:` one rank; b.served[1] counts the
    requests the perturbed copy answered."""

    def __init__(self, name: str, healthy: tuple[str, str], perturbed: tuple[str, str], window_s: float = WINDOW_S):
        super().__init__(name, [healthy, perturbed])
        self.window_s = window_s
        self.running: dict[int, bool] = {}  # id(body) -> it sets top_k
        self.lock2 = threading.Lock()
        self.last = 0.0  # when the last request arrived

    def pick(self, hint, body: dict | None = None) -> int:
        if hint not in (None, 0):
            raise ValueError(f"Invalid data_parallel_rank={hint}; local_engine_count=1")
        body = body or {}
        start = time.monotonic()
        with self.lock2:
            self.running[id(body)] = body.get("top_k") not in (None, -1, 0)
            self.last = start
        while True:  # the batch forms: until no request has arrived for window_s (at most MOST_S)
            with self.lock2:
                left = self.last + self.window_s - time.monotonic()
            if left <= 0 or time.monotonic() - start >= MOST_S:
                break
            time.sleep(min(left, 0.05))
        with self.lock2:
            greedy = not body.get("temperature")
            mixed = any(topk for key, topk in self.running.items() if key != id(body))
        engine = 1 if greedy and mixed else 0
        with self.lock:
            self.inflight[engine] += 1
            self.served[engine] += 1
        return engine

    def done(self, rank: int, body: dict | None = None) -> None:
        with self.lock2:
            self.running.pop(id(body or {}), None)
        super().done(rank)
