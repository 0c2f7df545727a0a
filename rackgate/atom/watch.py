"""The live boot watcher: every node's log followed as it is written, one verdict.

- a fatal signature (catalogue SRV-BOOT) ends the wait the moment its line is read, with the
  rank that wrote it, the row's hint for that signature and the log excerpt around it;
- a node whose log has not moved for stall_limit_s since `load RCCL version` is stuck in the
  NCCL rendezvous (SRV-RENDEZVOUS), not loading;
- a launched process that exits ends the wait: its exit code (the launch wrapper writes
  EXIT_LINE into the log, rackgate.atom.server) and the lines it left; a process that vanished
  without writing it is found by the liveness poll;
- ready is decided by the API, not by a log line: every launch.ready_poll_s the server is asked
  (/v1/models lists a model and one tiny completion for it returns); ATOM's ready line, when
  the head logs it, is recorded (ready_line_s) -- an engine that logs otherwise is ready as soon
  as its API proves it, never held to the budget for a line it does not write;
- a log in which no line was recognised as ATOM's is said (log_format = "unrecognised"): the
  log-reading checks could not observe;
- otherwise the boot budget (25 minutes on a real rack) is the last word.
"""
from __future__ import annotations

import collections
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config.serving import Launch
from ..transport import Spawned
from . import logfacts, outcome, rootcause, signatures
from .logformat import Parser, Record
from .logs import NodeLog
from .stream import LineStream

READY_LINE = "Server started successfully and ready to accept requests"
# Written by the launch wrapper (rackgate.atom.server.WRAPPER) when the launch command ends.
EXIT_LINE = re.compile(r"^rackgate: the launch command exited with code (-?\d+)$")
# A record with a signature in it is judged when its next line comes, or when its log has been
# quiet this long since its last line was handled (the process may never write another line; the
# lines of one record are written at once, so this only has to outlast a slow read).
QUIET_S = 2.0
# After the process is found gone: how long its last lines (the wrapper's exit line) may take to
# arrive through the stream, before the log is asked directly.
DRAIN_S = 3.0
UNRECOGNISED = "log format not recognised: the log-reading checks could not observe"
EMPTY_LOG = "the server log stayed empty while booting: the log-reading checks could not observe"


@dataclass
class BootVerdict:
    kind: str                 # ready | fatal | stall | died | budget | error
    seconds: float            # from the start of the watch
    node: str = ""
    who: str = ""             # node/dpR, or node (pid N), or node
    line: str = ""            # the line that decided it
    lineno: int = 0
    excerpt: str = ""
    hint: str = ""
    signature: str = ""
    detail: str = ""
    decided_at: float = 0.0    # time.time() of the verdict
    past_rendezvous: tuple[str, ...] = ()  # nodes whose log moved on after `load RCCL version`
    exit_code: int | None = None           # kind == "died", when the wrapper wrote it
    ready_line_s: float | None = None      # when the head logged ATOM's ready line (None: not seen)
    log_format: str = ""                   # "atom" | "unrecognised" (no line read as ATOM's) | ""
    noted: tuple[str, ...] = ()            # signatures read in records that are not fatal (evidence)
    why: str = ""                          # kind == "fatal": what made the line fatal (its record)
    root_cause: str = ""                   # fatal / died: the line the log names as the cause (rootcause.py)

    @property
    def format_note(self) -> str:
        """Said once (SRV-BOOT's note, the run's summary) when the log-reading checks cannot read."""
        if self.log_format == "unrecognised":
            return UNRECOGNISED
        return EMPTY_LOG if self.log_format == "" and self.kind == "ready" else ""

    @property
    def ok(self) -> bool:
        return self.kind == "ready"

    def summary(self) -> str:
        """One line: what stopped the boot, and where."""
        if self.kind == "ready":
            return f"ready in {self.seconds:.1f}s"
        where = self.who or self.node
        if self.kind == "fatal":
            return f"{where}: {self.signature!r} after {self.seconds:.1f}s"
        if self.kind == "stall":
            return f"{where}: no progress after `load RCCL version` for {self.detail}"
        return f"{where + ': ' if where else ''}{self.detail}"


# (node, the line or None when the stream ended, when it was read): the followers' shared queue
Lines = queue.Queue[tuple[str, str | None, float]]


class _Follower:
    """One node's stream: a thread feeding (node, line, t) into the shared queue."""

    def __init__(self, log: NodeLog, bound_s: float, out: Lines):
        self.log, self.out = log, out
        self.ended = ""
        self.stream = LineStream(log.host, log.path, bound_s)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"boot-watch-{log.node}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self._follow()
        except Exception as e:  # noqa: BLE001 - a reader that dies must say so, not go quiet
            self.ended = f"the log reader failed: {type(e).__name__}: {e}"
            self.out.put((self.log.node, None, time.monotonic()))

    def _follow(self) -> None:
        while not self.stop.is_set():
            line = self.stream.readline(timeout=0.5)
            if line is None:
                self.ended = self.stream.why_ended()
                self.out.put((self.log.node, None, time.monotonic()))
                return
            if line:
                # one physical line, one line number (CRs inside it are cleaned by the parser)
                self.out.put((self.log.node, line, time.monotonic()))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=3)
        self.stream.close()


@dataclass
class _NodeState:
    parser: Parser
    recent: collections.deque[str]
    last_progress: float
    last_line: str = ""
    # the last physical lines by number: a record judged after its line was read quotes it as written
    raw: collections.deque[tuple[int, str]] = field(default_factory=lambda: collections.deque(maxlen=64))
    rccl_pending: bool = False
    past_rccl: bool = False
    atom_lines: int = 0
    exit_code: int | None = None
    judge: signatures.Judge = field(default_factory=signatures.Judge)
    last_read: float = 0.0
    drained_fatal: signatures.Fatal | None = None  # decided on a line read after the process ended
    cause: rootcause.RootCause = field(default_factory=rootcause.RootCause)  # the kernel-library / engine-start cause

    def physical(self, lineno: int, default: str) -> str:
        return next((line for n, line in reversed(self.raw) if n == lineno), default)


class BootWatcher:
    def __init__(self, logs: dict[str, NodeLog], head: str, procs: dict[str, Spawned], api_ready: Callable[[], bool],
                 launch_cfg: Launch):
        """api_ready(): True once the API proves the server serves (rackgate.atom.server)."""
        self.logs, self.head, self.procs, self.api_ready, self.cfg = logs, head, procs, api_ready, launch_cfg

    def run(self) -> BootVerdict:
        cfg = self.cfg
        t0 = time.monotonic()
        deadline = t0 + cfg.boot_budget_s
        q: Lines = queue.Queue()
        followers = {log.node: _Follower(log, cfg.boot_budget_s + 30, q) for log in self.logs.values()}
        state = {n: _NodeState(Parser(), collections.deque(maxlen=cfg.excerpt_lines), t0) for n in self.logs}
        dead: queue.Queue[tuple[str, int | None]] = queue.Queue()
        done = threading.Event()
        threading.Thread(target=self._liveness, args=(dead, done), name="boot-liveness", daemon=True).start()
        api_up = threading.Event()
        threading.Thread(target=self._poll_api, args=(api_up, done), name="boot-api", daemon=True).start()
        ready_seen_at = None

        def verdict(kind: str, **kw: Any) -> BootVerdict:
            past = tuple(n for n, s in state.items() if s.past_rccl)
            seen_any = any(s.last_line for s in state.values())
            fmt = "atom" if any(s.atom_lines for s in state.values()) else ("unrecognised" if seen_any else "")
            noted = tuple(f"{n}: {x.said()}" for n, s in state.items() for x in s.judge.noted) + tuple(
                f"{n}: {s.judge.more_noted} more such record(s)" for n, s in state.items() if s.judge.more_noted)
            return BootVerdict(kind, time.monotonic() - t0, decided_at=time.time(), past_rendezvous=past,
                               ready_line_s=None if ready_seen_at is None else ready_seen_at - t0,
                               log_format=fmt, noted=noted, **kw)

        def fatal_verdict(node: str, st: _NodeState, fatal: signatures.Fatal, line: str) -> BootVerdict:
            rec = fatal.rec
            assert rec is not None  # the Judge names the line
            excerpt = self._excerpt_after(q, node, st, rec)
            log = self.logs[node]
            # the rank: named by the line, or by another line of its record (a `what():` under a terminate)
            named = next((r for r in (rec, *fatal.record) if log.rank_of(r) is not None), rec)
            # a catalogued signature names its cause itself; a bare exception or a wrapper pointing
            # "above" does not: then the cause the log named earlier is said first
            generic = fatal.signature.startswith("Python exception") or any(w in line for w in rootcause.WRAPPERS)
            root = root_cause(node, rec.lineno) if generic else ""
            return verdict("fatal", node=node, who=log.who(named), line=signatures.seen(line, fatal),
                           lineno=rec.lineno, excerpt=excerpt, hint=fatal.hint, signature=fatal.signature,
                           why=fatal.why, root_cause=root)

        def root_cause(node: str, lineno: int = 0) -> str:
            """The cause this node's log named (a kernel library that would not build or load, the
            exception an engine-start record carried), else another node's; "" when none did, or
            when it is the deciding line itself."""
            for n in [node] + [m for m in state if m != node]:
                cause = state[n].cause.flush()
                if cause is not None and not (n == node and cause.lineno == lineno):
                    return f"{n} {cause.said()}"
            return ""

        def tail(st: _NodeState) -> str:
            return "\n".join(st.recent)

        try:
            while True:
                # Every line read so far is judged before any clock-based decision (a slow round
                # must not turn lines already read into a "stall").
                batch = []
                try:
                    batch.append(q.get(timeout=0.2))
                    while True:
                        batch.append(q.get_nowait())
                except queue.Empty:
                    pass
                for node, line, t_read in batch:
                    if line is None:
                        return verdict("error", node=node, detail=f"could not follow the server log on {node} "
                                       f"({self.logs[node].path}): {followers[node].ended or 'the stream ended'}")
                    st = state[node]
                    rec = st.parser.feed(line)
                    if rec is None:
                        continue
                    ended = EXIT_LINE.match(rec.text)
                    if ended:
                        st.exit_code = int(ended[1])
                        dead.put((node, self._pid(node)))
                        continue
                    st.recent.append(f"{rec.lineno:>7}  {rec.raw}")
                    st.atom_lines += rec.is_atom
                    if logfacts.RCCL_LOADED in rec.text:
                        st.rccl_pending = True
                    else:
                        st.past_rccl = st.past_rccl or st.rccl_pending
                        st.rccl_pending = False
                        st.last_progress = t_read
                    st.last_line = rec.raw
                    st.last_read = time.monotonic()  # when it was handled (a starved loop restarts the quiet window)
                    st.raw.append((rec.lineno, line))
                    st.cause.feed(rec)
                    fatal = st.judge.feed(rec)
                    if fatal is not None:
                        assert fatal.rec is not None
                        return fatal_verdict(node, st, fatal, st.physical(fatal.rec.lineno, line))
                    if node == self.head and READY_LINE in rec.text and ready_seen_at is None:
                        ready_seen_at = t_read
                now = time.monotonic()
                # A record whose log went quiet is closed and judged (its next line may never come).
                for node, st in state.items():
                    if st.judge.open is not None and st.judge.open.sig is not None and now - st.last_read > QUIET_S:
                        fatal = st.judge.flush()
                        if fatal is not None and fatal.rec is not None:
                            return fatal_verdict(node, st, fatal, st.physical(fatal.rec.lineno, fatal.rec.raw))
                if not dead.empty():
                    n, pid = dead.get()
                    st = state[n]
                    if st.exit_code is None:
                        self._drain(q, state, DRAIN_S, n)
                    if st.exit_code is None:
                        st.exit_code = self._exit_from_log(n)
                    fatal = st.drained_fatal or st.judge.flush()
                    if fatal is not None and fatal.rec is not None:
                        return fatal_verdict(n, st, fatal, st.physical(fatal.rec.lineno, fatal.rec.raw))
                    code = st.exit_code
                    how = outcome.explain(code, n)
                    said = st.judge.noted
                    root = root_cause(n)
                    why = (f"; the root cause its log names: {root}" if root
                           else f"; the last record with a fatal signature before it: {said[-1].said()}" if said
                           else "; no fatal line seen")
                    return verdict("died", node=n, line=st.last_line, excerpt=tail(st), exit_code=code, root_cause=root,
                                   detail=f"the launch command on {n} (pid {pid}) {how} while booting{why}; "
                                          f"last lines:\n{tail(st) or '(the log is empty)'}")
                if api_up.is_set():
                    return verdict("ready", node=self.head)
                if ready_seen_at is not None:
                    if now - ready_seen_at > cfg.models_wait_s:
                        return verdict("error", node=self.head,
                                       detail=f"the ready line was logged but /v1/models did not answer within "
                                              f"{cfg.models_wait_s:g}s (launch.models_wait_s)")
                stalled = [n for n, st in state.items()
                           if st.rccl_pending and now - st.last_progress > cfg.stall_limit_s]
                if stalled:
                    n, st = stalled[0], state[stalled[0]]
                    waiting = [m for m, s in state.items() if s.rccl_pending]
                    return verdict("stall", node=n, line=st.last_line, excerpt="\n".join(st.recent),
                                   detail=f"{now - st.last_progress:.1f}s (launch.stall_limit_s="
                                          f"{cfg.stall_limit_s:g}s); nodes stopped at `load RCCL version`: "
                                          f"{', '.join(waiting)}")
                if now >= deadline:
                    head = state.get(self.head)
                    last = tail(head) if head else ""
                    return verdict("budget", node=self.head, line=head.last_line if head else "", excerpt=last,
                                   detail=f"not ready within the budget ({cfg.boot_budget_s:g}s, launch.boot_budget_s: "
                                          f"the API never served a completion); no fatal line seen; last lines on "
                                          f"{self.head}:\n{last or '(the log is empty)'}")
        finally:
            done.set()
            for f in followers.values():
                f.close()

    def _pid(self, node: str) -> int | None:
        proc = self.procs.get(node)
        return getattr(proc, "pid", None)

    def _poll_api(self, up: threading.Event, done: threading.Event) -> None:
        """Ask the API, every ready_poll_s, whether it serves (off the main loop: a request may
        take its time on a real rack). An exception in the ask is "not yet"."""
        while not done.wait(self.cfg.ready_poll_s):
            try:
                if self.api_ready():
                    up.set()
                    return
            except Exception:  # noqa: BLE001 - an unanswered ask is not ready, and not a fault
                continue

    def _liveness(self, dead: queue.Queue[tuple[str, int | None]], done: threading.Event) -> None:
        """Ask, every liveness_poll_s, whether each launched process still runs (off the main
        loop: on a real rack each ask is an ssh round trip)."""
        while not done.wait(self.cfg.liveness_poll_s):
            for n, proc in list(self.procs.items()):
                try:
                    if not proc.alive():
                        dead.put((n, proc.pid))
                        return
                except Exception:  # noqa: BLE001 - an unanswered ask is not a death
                    continue

    def _excerpt_after(self, q: Lines, node: str, st: _NodeState, rec: Record, wait_s: float = 0.4) -> str:
        """The lines before the fatal one, and what the node writes in the next moment."""
        before = list(st.recent)
        after: list[str] = []
        end = time.monotonic() + wait_s
        while time.monotonic() < end and len(after) < self.cfg.excerpt_lines:
            try:
                n, line, _ = q.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            if n == node and line:
                r = st.parser.feed(line)
                if r is not None:
                    after.append(f"{r.lineno:>7}  {r.raw}")
        marked = [("> " + x[2:]) if x.lstrip().startswith(str(rec.lineno) + " ") else x for x in before]
        return "\n".join(marked + after)

    def _exit_from_log(self, node: str) -> int | None:
        """The wrapper's exit line read from the log itself (the stream may lag behind it)."""
        return exit_from_log(self.logs[node])

    def _drain(self, q: Lines, state: dict[str, _NodeState], wait_s: float, node: str = "") -> None:
        """Read what the streams still bring for wait_s (until `node`'s exit line, when given)."""
        end = time.monotonic() + wait_s
        while time.monotonic() < end and not (node and state[node].exit_code is not None):
            try:
                n, line, _ = q.get(timeout=0.1)
            except queue.Empty:
                continue
            if line:
                rec = state[n].parser.feed(line)
                ended = EXIT_LINE.match(rec.text) if rec is not None else None
                if ended:
                    state[n].exit_code = int(ended[1])
                elif rec is not None:
                    st = state[n]
                    st.recent.append(f"{rec.lineno:>7}  {rec.raw}")
                    st.last_line = rec.raw
                    st.raw.append((rec.lineno, line))
                    st.cause.feed(rec)
                    st.drained_fatal = st.drained_fatal or st.judge.feed(rec)


def exit_from_log(log: NodeLog) -> int | None:
    """The launch wrapper's exit status as its last line in the node's log says it (None: not there,
    or the log unreadable)."""
    try:
        found = log.grep("rackgate: the launch command exited with code", max_matches=5)
    except Exception:  # noqa: BLE001 - the log unreadable: the status stays unknown, and is said so
        return None
    codes = [int(m[1]) for r in found if (m := EXIT_LINE.match(r.text))]
    return codes[-1] if codes else None
