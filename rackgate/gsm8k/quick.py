"""The quick GSM8K gate: lm-eval's questions, asked concurrently, scored as lm-eval scores them,
stopped the moment the sequential test has settled.

Questions are drawn in a seeded random order from the whole test split (so the accuracy seen is
an unbiased sample of the full run's) and scored strictly in that order, whatever order the
answers arrive in: slow answers (long reasoning) are never skipped in favour of fast ones.

For other callers (the real-engine self-test): `ask(task, client_factory, docs, concurrency)`
asks any documents against any OpenAI-compatible server and yields lm-eval's per-item verdicts.

A hang is read here as the per-rank mechanism reads it (rackgate.atom.fanout.HangRule): once some
questions have come back, questions still in flight with nothing of them moving (no headers, no
streamed chunk) past max(floor_s, factor x the slowest answer back) -- or that ran out their own
deadline meanwhile -- end the gate with `QuickHang`, carrying what came back and what hung as a
`Fanned`: the check reads it as every request-sending check does (`per_rank.read`, `served.hang_of`,
`gates/srv.py` `hang_finding`), a FAILED cross-referenced to SRV-DEADLOCK. Nothing back at all stays could-not-observe.
"""
from __future__ import annotations

import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field, replace

from ..atom.client import Client, ServerError, StreamHandle
from ..atom.fanout import Ask, Fanned, Got, HangRule
from ..errors import CouldNotObserve
from ..gates.sanity import degenerate, degenerate_so_far
from ..gates.sequential import Decision, Sprt
from . import lengths
from .scoring import ItemVerdict, Outcome, judge
from .task import FLEXIBLE, STRICT, Gsm8kTask, Request, response_text

ClientFactory = Callable[[], Client]
# one question's (text lm-eval scores, finish_reason, seconds, tokens), or what its ask raised
Answer = tuple[str, str | None, float, int]
Box = list[Answer | BaseException]
# (doc, request, result box, done, handle, timeout, rank); None: a worker's stop marker
Job = tuple[int, Request, Box, threading.Event, StreamHandle, float | None, int | None] | None


def question_order(n: int, seed: int) -> list[int]:
    """A seeded random order of the test split's n documents."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def _post(client: Client, task: Gsm8kTask, doc: int, req: Request, timeout: float | None = None,
          handle: StreamHandle | None = None, rank: int | None = None) -> Answer:
    """(the text lm-eval would score, finish_reason, seconds, tokens) of one question, asked as a
    stream (so that it can be cancelled, and cut the moment its text is degenerate: a '!' answer
    is scored as it is, never waited out to max_tokens); ServerError otherwise. `rank`: ATOM's
    data_parallel_rank hint, so the answer is attributed to its rank."""
    body = {"model": client.model, **req.body}
    if rank is not None:
        body["data_parallel_rank"] = rank
    reply = client.stream(req.path, body, timeout=timeout, handle=handle, stop_when=degenerate_so_far)
    if reply.status != 200:
        raise ServerError(f"GSM8K question {doc}: POST {req.path}: HTTP {reply.status}: {str(reply.body)[:200]}")
    try:
        text, finish = response_text(task.api, reply.body)
    except ValueError as e:
        raise ServerError(f"GSM8K question {doc}: POST {req.path}: {e}") from None
    usage = reply.body.get("server_usage") or reply.body.get("usage") or {}  # the server's count where it sent one
    return text, finish, reply.elapsed, int(usage.get("completion_tokens") or 0)


class _Workers:
    """Daemon threads, one client each. close() cancels every request still in flight: its
    stream is closed, so the server stops generating for it (a decided gate leaves nothing
    running on the server)."""

    def __init__(self, task: Gsm8kTask, client_factory: ClientFactory, n: int):
        self.jobs: queue.Queue[Job] = queue.Queue()
        self.task = task
        self.inflight: set[StreamHandle] = set()
        self.lock = threading.Lock()
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
            doc, req, box, done, handle, timeout, rank = job
            with self.lock:
                self.inflight.add(handle)
            try:
                client = client or client_factory()
                box.append(_post(client, self.task, doc, req, timeout, handle, rank))
            except BaseException as e:  # noqa: BLE001 - handed to the caller, raised there
                box.append(e)
            finally:
                with self.lock:
                    self.inflight.discard(handle)
            done.set()

    def submit(self, doc: int, req: Request, timeout: float | None,
               rank: int | None = None) -> tuple[Box, threading.Event, StreamHandle]:
        box: Box = []
        done, handle = threading.Event(), StreamHandle()
        self.jobs.put((doc, req, box, done, handle, timeout, rank))
        return box, done, handle

    def close(self) -> None:
        # drop what has not started, cancel what is in flight, then one stop marker per thread
        try:
            while True:
                job = self.jobs.get_nowait()
                if job is not None:
                    job[4].cancel()
        except queue.Empty:
            pass
        with self.lock:
            for h in list(self.inflight):
                h.cancel()
        for _ in self.threads:
            self.jobs.put(None)


# Load that fits the server: start with one question in flight; after each answer, double the
# questions in flight (up to the rack file's accuracy.num_concurrent) while the answer's time per
# token stays within HOLDS x the first answer's, halve it when it does not (an engine that
# serves one request at a time queues the second). Each request's deadline: DEADLINE_FACTOR x
# the first answer's seconds x the questions in flight, at least MIN_DEADLINE_S, at most the rack
# file's bound (accuracy.request_timeout_s).
HOLDS = 1.5
DEADLINE_FACTOR = 4.0
MIN_DEADLINE_S = 30.0


@dataclass
class Pace:
    """The quick gate's load, as it adapts (read by the caller for its progress line)."""
    max_in_flight: int
    bound_s: float | None = None
    in_flight: int = 1
    first_s: float | None = None
    first_per_token_s: float | None = None
    peak: int = 1

    def deadline(self) -> float | None:
        if self.first_s is None:
            return self.bound_s
        d = max(MIN_DEADLINE_S, DEADLINE_FACTOR * self.first_s * self.in_flight)
        return min(d, self.bound_s) if self.bound_s else d

    def answered(self, seconds: float, tokens: int) -> None:
        per_token = seconds / max(1, tokens)
        if self.first_s is None:
            self.first_s, self.first_per_token_s = seconds, per_token
        assert self.first_per_token_s is not None  # set with first_s
        if per_token <= HOLDS * self.first_per_token_s:
            self.in_flight = min(self.max_in_flight, self.in_flight * 2)
        else:
            self.in_flight = max(1, self.in_flight // 2)
        self.peak = max(self.peak, self.in_flight)

    def describe(self) -> str:
        first = f"first answer {self.first_s:.1f}s" if self.first_s is not None else "no answer yet"
        return f"{self.in_flight} in flight (peak {self.peak}, at most {self.max_in_flight}; {first})"


class QuickHang(Exception):
    """Questions in flight past the hang bound while others came back: evidence (SRV-DEADLOCK's
    signature), never could-not-observe. `fanned`: the questions back (`got`) and those hung."""

    def __init__(self, fanned: Fanned, scored: int):
        self.fanned, self.scored = fanned, scored
        super().__init__(f"{len(fanned.hung)} of {fanned.asked} GSM8K questions still in flight after "
                         f"{fanned.bound_s or 0:.1f}s while {len(fanned.replied)} came back")


@dataclass
class _Out:
    """One question sent: its result box, done flag, stream handle, deadline and when it went out."""
    doc: int
    box: Box
    done: threading.Event
    handle: StreamHandle
    deadline: float | None
    sent: float
    rank: int | None
    prompt: str

    def idle(self, now: float) -> float:
        return now - max(self.sent, self.handle.progress or self.sent)

    def timed_out(self) -> bool:
        return bool(self.box) and isinstance(self.box[0], ServerError) and "no answer within" in str(self.box[0])

    def got(self) -> Got | None:
        """The answer back as the per-rank mechanism reads it (None: not back, or it ran out its time)."""
        if not self.done.is_set() or not self.box or self.timed_out():
            return None
        res = self.box[0]
        if isinstance(res, BaseException):
            return Got(Ask(self.prompt, self.rank), error=str(res), replied=isinstance(res, ServerError) and
                       "HTTP" in str(res), seconds=time.monotonic() - self.sent)
        text, finish, seconds, tokens = res
        return Got(Ask(self.prompt, self.rank), text=text, finish=finish, seconds=seconds, replied=True, tokens=tokens)


def _hung(out: list[_Out], back: list[Got], hang: HangRule, t0: float) -> Fanned | None:
    """The hang among the questions out (None: none): some came back, and every question still out
    has not moved for the bound, or ran out its own deadline (requests that timed out on their own
    bound while others came back are hung, as fan_out reads them)."""
    now = time.monotonic()
    got = back + [g for o in out if (g := o.got()) is not None]
    answered = [g.seconds for g in got if g.replied]
    if not answered:
        return None
    slowest = max(answered)
    bound = hang.bound(slowest)
    still = [o for o in out if not o.done.is_set() or o.timed_out()]
    if not still or not all(o.timed_out() or o.idle(now) >= bound for o in still):
        return None
    asked = len(got) + len(still)
    return Fanned(got, asked, len(still), now - t0, hung=[Ask(o.prompt, o.rank) for o in still],
                  bound_s=bound, slowest_s=slowest)


def ask(task: Gsm8kTask, client_factory: ClientFactory, docs: Iterable[int], concurrency: int,
        wait_s: float | None = None, pace: Pace | None = None,
        rank_of: Callable[[int], int | None] | None = None,
        hang: HangRule | None = None) -> Generator[ItemVerdict, None, None]:
    """lm-eval's verdict on each document, in the order given, with up to `concurrency` questions
    in flight (as many as the server takes, see Pace). Prompts are built and answers scored
    here, in the caller's thread (lm-eval's task is not shared across threads); the threads only
    talk HTTP. Stopping the iteration cancels the questions in flight. A request that fails or
    passes its deadline raises ServerError; wait_s bounds every request (the rack file's).
    rank_of(doc): the DP rank the question is routed to (ATOM's hint), None: the server picks.
    hang: questions in flight past its bound while others came back raise QuickHang."""
    pace = pace or Pace(concurrency, wait_s)
    workers = _Workers(task, client_factory, concurrency)
    pending: list[_Out] = []  # in the order given
    back: list[Got] = []      # the answers back so far (for the hang rule's slowest)
    t0 = time.monotonic()
    it = iter(docs)
    try:
        while True:
            while len(pending) < pace.in_flight:
                doc = next(it, None)
                if doc is None:
                    break
                deadline = pace.deadline()
                rank = rank_of(doc) if rank_of else None
                box, done, handle = workers.submit(doc, task.request(doc), deadline, rank)
                pending.append(_Out(doc, box, done, handle, deadline, time.monotonic(), rank,
                                    f"GSM8K question {doc}"))
            if not pending:
                return
            head = pending[0]
            end = None if head.deadline is None else time.monotonic() + head.deadline + 5
            while not head.done.wait(0.5 if hang else (None if end is None else max(0.0, end - time.monotonic()))):
                held = _hung(pending, back, hang, t0) if hang else None
                if held:
                    raise QuickHang(held, len(back))
                if end is not None and time.monotonic() >= end:
                    break
            if hang and head.timed_out():
                held = _hung(pending, back, hang, t0)
                if held:
                    raise QuickHang(held, len(back))
            pending.pop(0)
            doc, box, deadline = head.doc, head.box, head.deadline
            if not head.done.is_set():
                raise ServerError(f"GSM8K question {doc} got no answer within {deadline:g}s")
            res = box[0]
            if isinstance(res, ServerError) and deadline is not None and "within" in str(res) and \
                    pace.first_s is not None:
                raise ServerError(f"GSM8K question {doc}: {res} (the deadline: {DEADLINE_FACTOR:g} x the first "
                                  f"answer's {pace.first_s:.1f}s x {pace.in_flight} in flight, at most "
                                  "accuracy.request_timeout_s)")
            if isinstance(res, BaseException):
                raise res
            text, finish, seconds, tokens = res
            pace.answered(seconds, tokens)
            got = head.got()
            if got is not None:
                back.append(got)
            yield replace(judge(task, doc, text, finish), tokens=tokens)
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


def not_language(item: ItemVerdict) -> bool:
    """The answer is the server's fault, not the model's: degenerate text, or no text at all
    although the model stopped by itself (empty with finish_reason length is a budget: ACC-BUDGET)."""
    k = kind(item)
    return k == "degenerate" or (k == "empty" and item.finish_reason != "length")


@dataclass
class QuickResult:
    decision: Decision
    sprt: Sprt
    items: list[ItemVerdict] = field(default_factory=list)
    elapsed_s: float = 0.0
    population: int = 0
    pace: Pace | None = None
    rank_of: dict[int, int] = field(default_factory=dict)   # doc -> the DP rank it was routed to
    nodes: dict[int, str] = field(default_factory=dict)     # DP rank -> its node

    def by_rank(self) -> dict[int, Counter[str]]:
        """{rank: {"not language": n, "answers": n}} for the answers routed to a known rank."""
        out: dict[int, Counter[str]] = {}
        for it in self.items:
            r = self.rank_of.get(it.doc)
            if r is not None:
                c = out.setdefault(r, Counter())
                c["answers"] += 1
                c["not language"] += not_language(it)
        return out

    def broken(self) -> str:
        """The ranks whose every answer is degenerate or empty (a broken rank, not a model below
        the threshold), as node/dpR; '' when none (or no rank is known)."""
        bad = [r for r, c in sorted(self.by_rank().items()) if c["not language"] == c["answers"]]
        return ", ".join(f"{self.nodes.get(r, '?')}/dp{r}" for r in bad)

    def degenerate_line(self) -> str:
        """The degenerate share apart from the wrong answers, and per rank where attributable;
        '' when every answer is language."""
        c = self.kinds()
        k = sum(not_language(it) for it in self.items)
        if not k:
            return ""
        n = len(self.items)
        head = (f"{k} of {n} answers degenerate or empty ({c['degenerate']} degenerate, {k - c['degenerate']} empty "
                f"with finish_reason stop), apart from {c['wrong']} coherent wrong answers: the server is not "
                "producing the model's answers there")
        ranks = self.by_rank()
        if not ranks:
            return head + ("; every answer: the whole server" if k == n else
                           "; which DP rank served them is not known (no rank hint without a rack file)")
        per = "; ".join(f"{self.nodes.get(r, '?')}/dp{r} {c_['not language']}/{c_['answers']}"
                        for r, c_ in sorted(ranks.items()) if c_["not language"])
        broken = self.broken()
        return (head + f"; degenerate per rank: {per}"
                + (f"; broken rank(s) (every answer degenerate): {broken}, not accuracy below the threshold"
                   if broken else ""))

    def counts(self, filter_name: str = STRICT) -> Counter[Outcome]:
        return Counter(it.filters[filter_name].outcome for it in self.items)

    def accuracy(self, filter_name: str = STRICT) -> float:
        return self.counts(filter_name)[Outcome.CORRECT] / max(1, len(self.items))

    def kinds(self, filter_name: str = STRICT) -> Counter[str]:
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

    def diagnosis(self) -> str:
        """What a FAIL means, from the kinds of answers: a broken server (degenerate or empty
        answers) or a model that, as served, answers below the threshold (coherent answers)."""
        c = self.kinds()
        bad = len(self.items) - c["correct"]
        if not bad:
            return ""
        if c["degenerate"] + c["empty"] > bad / 2:
            return (f"{c['degenerate']} degenerate and {c['empty']} empty of {bad} missed answers: the server is not "
                    "producing the model's answers (see SRV-SANITY, ACC-BUDGET)")
        return (f"the answers are coherent ({c['wrong']} wrong, {c['truncated']} truncated, {c['unparsed']} unparsed "
                f"of {bad} missed): the model, as served, is below the threshold in force "
                f"(pass at >= {self.sprt.p_pass:.4f})")

    def per_question(self) -> str:
        """doc, strict-match outcome, extracted, finish_reason: one line per question (evidence)."""
        return per_question(self.items)

    def length_facts(self) -> dict[str, object]:
        """The output-length facts of its answers (lengths.facts, MLPerf TEST09)."""
        return lengths.facts(self.items)

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


def per_question(items: Iterable[ItemVerdict]) -> str:
    """doc, strict-match outcome, extracted, finish_reason: one line per question (evidence)."""
    return "\n".join(f"{it.doc}\t{it.strict.outcome.value}\t{it.strict.extracted}\t{it.finish_reason}"
                     for it in items)


def progress_line(n: int, population: int, counts: Counter[str], llr: float, sprt: Sprt, elapsed: float) -> str:
    """counts: by kind() (correct, wrong, truncated, degenerate, unparsed, empty)."""
    return (f"ACC-QUICK {n}/{population} scored in {elapsed:.0f}s: "
            + ", ".join(f"{counts[k]} {k}" for k in KINDS) +
            f"; llr {llr:+.2f} (PASS at {sprt.upper:+.2f}, FAIL at {sprt.lower:+.2f})")


class QuickTimeout(CouldNotObserve):
    """The gate ran out of time before the test settled; str() says how far it got."""


def run(task: Gsm8kTask, client_factory: ClientFactory, sprt: Sprt, order: list[int], concurrency: int,
        progress: Callable[[str], None] | None = None, progress_every_s: float = 10.0,
        wait_s: float | None = None, timeout_s: float | None = None,
        table: dict[int, str] | None = None, hang: HangRule | None = None) -> QuickResult:
    """Ask documents in `order` until the sequential test decides (or timeout_s passes:
    QuickTimeout, since a slow server says nothing about accuracy). `table` ({DP rank: node}, from
    the rack file): the questions go to the ranks in turn (ATOM's data_parallel_rank hint), so
    every answer is attributed to its rank. `hang`: the hang rule (QuickHang)."""
    t0 = last = time.monotonic()
    population = len(order)
    result = QuickResult(Decision(None, 0, 0, 0.0, ""), sprt, population=population)
    counts: Counter[str] = Counter()
    k = 0
    result.pace = pace = Pace(concurrency, wait_s)
    docs = order[:max(sprt.max_n, 1)]
    if table:
        ranks = list(table)
        result.rank_of = {doc: ranks[i % len(ranks)] for i, doc in enumerate(docs)}
        result.nodes = dict(table)
    answers = ask(task, client_factory, docs, concurrency, wait_s, pace, result.rank_of.get if table else None, hang)
    try:
        for item in answers:
            result.items.append(item)
            counts[kind(item)] += 1
            k += item.passed
            result.decision = sprt.decide(len(result.items), k, population)
            now = time.monotonic()
            if progress and (now - last >= progress_every_s or result.decision.verdict):
                last = now
                progress(progress_line(len(result.items), population, counts, result.decision.llr, sprt, now - t0)
                         + f"; {pace.describe()}")
            if result.decision.verdict:
                break
            if timeout_s is not None and now - t0 > timeout_s:
                result.elapsed_s = now - t0
                raise QuickTimeout(f"the quick gate did not settle within accuracy.quick_timeout_s ({timeout_s:g}s): "
                                   f"{result.summary()}")
    finally:
        answers.close()  # the decision: every request still in flight is cancelled now
    result.elapsed_s = time.monotonic() - t0
    return result
