"""The quick GSM8K gate: lm-eval's questions, asked concurrently, scored as lm-eval scores them,
stopped the moment the sequential test has settled.

Questions are drawn in a seeded random order from the whole test split (so the accuracy seen is
an unbiased sample of the full run's) and scored strictly in that order, whatever order the
answers arrive in: slow answers (long reasoning) are never skipped in favour of fast ones.

For other callers (the real-engine self-test): `ask(task, client_factory, docs, concurrency)`
asks any documents against any OpenAI-compatible server and yields lm-eval's per-item verdicts.
"""
from __future__ import annotations

from ..errors import CouldNotObserve

import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ..atom.client import Client, ServerError
from ..gates.sanity import degenerate
from .scoring import ItemVerdict, Outcome, judge
from .sequential import Decision, Sprt
from .task import FLEXIBLE, STRICT, Gsm8kTask, response_text

ClientFactory = Callable[[], Client]


def question_order(n: int, seed: int) -> list[int]:
    """A seeded random order of the test split's n documents."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def _post(client: Client, task: Gsm8kTask, doc: int, req) -> tuple[str, str | None]:
    """(the text lm-eval would score, finish_reason) of one question; ServerError otherwise."""
    body = {"model": client.model, **req.body}
    reply = client.request("POST", req.path, body)
    if reply.status != 200:
        raise ServerError(f"GSM8K question {doc}: POST {req.path}: HTTP {reply.status}: {str(reply.body)[:200]}")
    try:
        return response_text(task.api, reply.body)
    except ValueError as e:
        raise ServerError(f"GSM8K question {doc}: POST {req.path}: {e}") from None


class _Workers:
    """Daemon threads, one client each: a decided gate walks away from requests still in flight
    (each bounded by its client's timeout) instead of waiting for them."""

    def __init__(self, task: Gsm8kTask, client_factory: ClientFactory, n: int):
        self.jobs: queue.Queue = queue.Queue()
        self.task = task
        self.threads = [threading.Thread(target=self._run, args=(client_factory,), daemon=True,
                                         name=f"gsm8k-{i}") for i in range(n)]
        for t in self.threads:
            t.start()

    def _run(self, client_factory: ClientFactory) -> None:
        client = None
        while True:
            job = self.jobs.get()
            if job is None:
                return
            doc, req, box, done = job
            try:
                client = client or client_factory()
                box.append(_post(client, self.task, doc, req))
            except BaseException as e:  # noqa: BLE001 - handed to the caller, raised there
                box.append(e)
            done.set()

    def submit(self, doc: int, req) -> tuple[list, threading.Event]:
        box, done = [], threading.Event()
        self.jobs.put((doc, req, box, done))
        return box, done

    def close(self) -> None:
        # drop what has not started, then one stop marker per thread
        try:
            while True:
                self.jobs.get_nowait()
        except queue.Empty:
            pass
        for _ in self.threads:
            self.jobs.put(None)


def ask(task: Gsm8kTask, client_factory: ClientFactory, docs: Iterable[int], concurrency: int,
        wait_s: float | None = None) -> Iterator[ItemVerdict]:
    """lm-eval's verdict on each document, in the order given, with `concurrency` questions in
    flight. Prompts are built and answers scored here, in the caller's thread (lm-eval's task
    is not shared across threads); the threads only talk HTTP. Stopping the iteration abandons
    the questions in flight. A request that fails raises ServerError; wait_s bounds the wait
    for one answer beyond the client's own timeout."""
    workers = _Workers(task, client_factory, concurrency)
    pending: list = []  # (doc, result box, done event), in the order given
    it = iter(docs)
    try:
        while True:
            while len(pending) < concurrency:
                doc = next(it, None)
                if doc is None:
                    break
                pending.append((doc, *workers.submit(doc, task.request(doc))))
            if not pending:
                return
            doc, box, done = pending.pop(0)
            if not done.wait(wait_s):
                raise ServerError(f"GSM8K question {doc} got no answer within {wait_s:g}s")
            res = box[0]
            if isinstance(res, BaseException):
                raise res
            text, finish = res
            yield judge(task, doc, text, finish)
    finally:
        workers.close()


# What a scored answer was, in words that separate the server's faults from the model's limits:
KINDS = ("correct", "wrong", "truncated", "degenerate", "unparsed", "empty")
KIND_WORDS = {
    "correct": "the expected number",
    "wrong": "a coherent answer with another number: the model's accuracy",
    "truncated": "cut off by max_tokens before its answer line: finish_reason length",
    "degenerate": "not language ('!!!!', one token repeated): see SRV-SANITY",
    "unparsed": "finished, but without a number lm-eval's filter extracts",
    "empty": "no text at all: see ACC-BUDGET",
}


def kind(item: ItemVerdict, filter_name: str = STRICT) -> str:
    """One of KINDS for this answer under this filter (lm-eval's score is unchanged: only
    'correct' scores)."""
    out = item.filters[filter_name].outcome
    if out is Outcome.CORRECT:
        return "correct"
    if out is Outcome.EMPTY:
        return "empty"
    if degenerate(item.response):
        return "degenerate"
    if item.finish_reason == "length":
        return "truncated"
    return "unparsed" if out is Outcome.UNPARSED else "wrong"


@dataclass
class QuickResult:
    decision: Decision
    sprt: Sprt
    items: list[ItemVerdict] = field(default_factory=list)
    elapsed_s: float = 0.0
    population: int = 0

    def counts(self, filter_name: str = STRICT) -> Counter:
        return Counter(it.filters[filter_name].outcome for it in self.items)

    def accuracy(self, filter_name: str = STRICT) -> float:
        return self.counts(filter_name)[Outcome.CORRECT] / max(1, len(self.items))

    def kinds(self, filter_name: str = STRICT) -> Counter:
        return Counter(kind(it, filter_name) for it in self.items)

    def outcome_line(self, filter_name: str = STRICT) -> str:
        c = self.kinds(filter_name)
        return (f"{filter_name} {c['correct']}/{len(self.items)} correct ({self.accuracy(filter_name):.3f}): "
                + ", ".join(f"{c[k]} {k} ({KIND_WORDS[k]})" for k in KINDS[1:] if c[k]))

    def summary(self) -> str:
        d, s = self.decision, self.sprt
        how = {"settled": "the test settled",
               "question limit": f"not settled by the question limit ({s.max_n}): decided on the evidence so far",
               "all questions": "every question asked: the accuracy is exact"}.get(d.how, d.how)
        return (f"{(d.verdict or 'undecided').upper()} after {d.n} of {self.population} questions "
                f"({how}; {self.elapsed_s:.0f}s): {self.outcome_line(STRICT)}; {self.outcome_line(FLEXIBLE)}; "
                f"llr {d.llr:+.2f} (PASS at {s.upper:+.2f}, FAIL at {s.lower:+.2f}: accuracy "
                f">= {s.p_pass:.4f} vs <= {s.p_fail:.4f}, false pass {s.false_pass:g}, false fail {s.false_fail:g})")

    def examples(self, limit: int = 3) -> list[str]:
        """A few answers that did not score, as evidence for a failure message."""
        out = []
        for it in self.items:
            v = it.strict
            if v.outcome is Outcome.CORRECT:
                continue
            out.append(f"question {it.doc}: {kind(it)}, expected {it.target.split('####')[-1].strip()!r}, "
                       f"extracted {v.extracted!r}, finish_reason {it.finish_reason!r}, "
                       f"answer {it.response[-80:]!r}")
            if len(out) >= limit:
                break
        return out


def progress_line(n: int, population: int, counts: Counter, llr: float, sprt: Sprt, elapsed: float) -> str:
    """counts: by kind() (correct, wrong, truncated, degenerate, unparsed, empty)."""
    return (f"ACC-QUICK {n}/{population} scored in {elapsed:.0f}s: "
            + ", ".join(f"{counts[k]} {k}" for k in KINDS) +
            f"; llr {llr:+.2f} (PASS at {sprt.upper:+.2f}, FAIL at {sprt.lower:+.2f})")


class QuickTimeout(CouldNotObserve):
    """The gate ran out of time before the test settled; str() says how far it got."""


def run(task: Gsm8kTask, client_factory: ClientFactory, sprt: Sprt, order: list[int], concurrency: int,
        progress: Callable[[str], None] | None = None, progress_every_s: float = 10.0,
        wait_s: float | None = None, timeout_s: float | None = None) -> QuickResult:
    """Ask documents in `order` until the sequential test decides (or timeout_s passes:
    QuickTimeout, since a slow server says nothing about accuracy)."""
    t0 = last = time.monotonic()
    population = len(order)
    result = QuickResult(Decision(None, 0, 0, 0.0, ""), sprt, population=population)
    counts: Counter = Counter()
    k = 0
    for item in ask(task, client_factory, order[:max(sprt.max_n, 1)], concurrency, wait_s):
        result.items.append(item)
        counts[kind(item)] += 1
        k += item.passed
        result.decision = sprt.decide(len(result.items), k, population)
        now = time.monotonic()
        if progress and (now - last >= progress_every_s or result.decision.verdict):
            last = now
            progress(progress_line(len(result.items), population, counts, result.decision.llr, sprt, now - t0))
        if result.decision.verdict:
            break
        if timeout_s is not None and now - t0 > timeout_s:
            result.elapsed_s = now - t0
            raise QuickTimeout(f"the quick gate did not settle within accuracy.quick_timeout_s ({timeout_s:g}s): "
                               f"{result.summary()}")
    result.elapsed_s = time.monotonic() - t0
    return result
