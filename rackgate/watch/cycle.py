"""One cycle of `rackgate watch`: what is due (rackgate/report/validity.py: failed, unobserved,
expired, or older than --max-age), one suite run of exactly that (a subprocess in its own session,
its PID tracked), its items merged over the state's verdict.json (each item's newest outcome), the
per-item history appended, the metrics textfile rewritten.

The state directory (default reports/watch/):
    verdict.json           what stands: every item's newest outcome with its stamps (atomic)
    verdict.counters.json  the GPUs' error counters as last read
    history.jsonl          append-only: a line per item judged ({"cycle", "test", "outcome", ...}) and
                           one per cycle ({"cycle", "started", "ended", "ran", "rc", "why"})
    run/                   the current cycle's run: its verdict, junit, output, pid (its process group)
    watch.lock             held (flock) by the watch and inherited by its run: never two at once
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from ..ids import path_arg
from ..report import openmetrics, validity, verdict_file
from ..transport.procs import kill_group

VERDICT, HISTORY, RUN, LOCK = "verdict.json", "history.jsonl", "run", "watch.lock"


@dataclass
class Watch:
    state: Path
    args: list[str]                       # the suite's arguments (the rack, --atom-url, --tier, -m ...)
    max_age: timedelta | None = None
    metrics: Path | None = None
    run_timeout_s: float = 7200.0
    lock_fd: int | None = None            # inherited by the run: the lock stands while it runs
    child: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    say: Callable[[str], None] = print

    @property
    def verdict_path(self) -> Path:
        return self.state / VERDICT

    def current(self) -> verdict_file.Verdict | None:
        try:
            return verdict_file.read(self.verdict_path)
        except ValueError:
            return None

    def next_cycle(self) -> int:
        """One past the last cycle the history records (a restart continues the count)."""
        return self._last()[0] + 1

    def _last(self) -> tuple[int, float | None]:
        """(the last cycle the history records, the last run's duration)."""
        last, duration = 0, None
        try:
            with open(self.state / HISTORY) as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue   # a line cut by a crash: the next one starts fresh
                    if isinstance(rec, dict) and "ran" in rec:
                        last = max(last, int(rec.get("cycle", 0)))
                        duration = rec.get("duration_s", duration)
        except OSError:
            pass
        return last, duration

    def due(self, now: datetime) -> tuple[list[str] | None, str]:
        """(the test paths to run: None for the whole selection, [] for nothing; why)."""
        old = self.current()
        if old is None or not old.get("items"):
            return None, "no verdict yet: the whole selection"
        items = [i for i in old["items"] if not i["test"].startswith("(")]
        due = validity.due(items, now, validity.current_image(items), self.max_age)
        if len(due) == len(items):
            return None, f"all {len(items)} items due: the whole selection"
        return sorted({path_arg(t) for t in due}), f"{len(due)} of {len(items)} items due (failed, unobserved or expired)"

    def command(self, paths: list[str]) -> list[str]:
        run = self.state / RUN
        return [sys.executable, "-m", "rackgate.cli", *self.args, *paths, f"--verdict-file={run / VERDICT}",
                f"--junitxml={run / 'junit.xml'}", "--alluredir=", "-p", "no:cacheprovider"]

    def once(self, stopping: Callable[[], bool] = lambda: False) -> dict[str, Any]:
        """One cycle; returns its history record."""
        n, started = self.next_cycle(), datetime.now(timezone.utc)
        paths, why = self.due(started)
        record: dict[str, Any] = {"cycle": n, "started": validity.stamp(started), "started_s": round(started.timestamp(), 3),
                                  "why": why}
        if paths == []:
            record.update(ran=0, rc=None, ended=validity.stamp(datetime.now(timezone.utc)))
            self._publish(self.current(), openmetrics.read_counters(self.verdict_path), self._last()[1])
            self._append([record])
            return record
        run = self.state / RUN
        run.mkdir(parents=True, exist_ok=True)
        (run / VERDICT).unlink(missing_ok=True)
        t0 = time.monotonic()
        rc = self._run(self.command(paths or []), run / "output.txt", stopping)
        duration = time.monotonic() - t0
        try:
            new = verdict_file.read(run / VERDICT)
        except ValueError:
            tail = (run / "output.txt").read_text(errors="replace").strip().splitlines()[-1:]
            new = verdict_file.unknown(self.args_rack(), f"the cycle's run exited {rc} without a verdict file"
                                       + (f"; last output: {tail[0][:300]}" if tail else ""))
        old = self.current()
        merged = new if old is None else verdict_file.rebuild(_checks_only(old), new)
        verdict_file.write(self.verdict_path, merged)
        counters = openmetrics.read_counters(run / VERDICT)
        if counters:
            openmetrics.write_counters(self.verdict_path, counters)
        self._publish(merged, counters or openmetrics.read_counters(self.verdict_path), duration)
        judged = [{"cycle": n, "test": i["test"], "outcome": i["outcome"], "row": i["row"], "judged_at": i["judged_at"],
                   "seen": " ".join(i["seen"].split())[:200]} for i in new.get("items", [])]
        judged += [{"cycle": n, "test": u["test"], "outcome": "UNKNOWN", "row": "", "judged_at": "", "seen": u["why"][:300]}
                   for u in new.get("rack_unknown", []) if u["test"] == verdict_file.RUN]
        record.update(ran=len(new.get("items", [])), rc=rc, verdict=new["verdict"], duration_s=round(duration, 3),
                      ended=validity.stamp(datetime.now(timezone.utc)))
        self._append([*judged, record])
        return record

    def args_rack(self) -> str:
        """The rack's name for a run that left no verdict: its rack file's, as given."""
        for a, b in zip(self.args, [*self.args[1:], ""]):
            if a.startswith("--rack="):
                return Path(a.partition("=")[2]).stem
            if a == "--rack" and b:
                return Path(b).stem
        return "sim"

    def _run(self, argv: list[str], output: Path, stopping: Callable[[], bool]) -> int | None:
        """The cycle's run in its own session (its group ended by PID on SIGTERM or past the timeout);
        None when it was stopped."""
        with open(output, "wb") as out:
            self.child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True,
                                          pass_fds=(self.lock_fd,) if self.lock_fd is not None else ())
            (output.parent / "pid").write_text(f"{self.child.pid}\n")   # the run's process group, for a person
            deadline = time.monotonic() + self.run_timeout_s
            try:
                while True:
                    try:
                        return self.child.wait(timeout=0.5)
                    except subprocess.TimeoutExpired:
                        pass
                    if stopping() or time.monotonic() > deadline:
                        self.stop_child()
                        return None
            finally:
                self.child = None

    def stop_child(self, grace_s: float = 60.0) -> None:
        """TERM to the run's process group (the suite ends what it started), KILL past `grace_s`."""
        if self.child is not None:
            kill_group(self.child, grace=grace_s)

    def _publish(self, verdict: verdict_file.Verdict | None, counters: list[dict[str, Any]], duration: float | None) -> None:
        if self.metrics is not None and verdict is not None:
            openmetrics.write(self.metrics, openmetrics.render(verdict, counters, duration, time.time()))

    def _append(self, records: list[dict[str, Any]]) -> None:
        """Append-only, one write and one fsync per cycle."""
        self.state.mkdir(parents=True, exist_ok=True)
        with open(self.state / HISTORY, "a") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records))
            f.flush()
            os.fsync(f.fileno())


def _checks_only(v: verdict_file.Verdict) -> verdict_file.Verdict:
    """A verdict without a run's own entries ("(tier quick)", "(the run)"): the next cycle says its own."""
    return {**v, "items": [i for i in v.get("items", []) if not i["test"].startswith("(")]}
