"""rackgate watch [--every S] [--cycles N] [--state DIR] [--max-age S] [--metrics-file FILE]
                [--lock-wait S] [--run-timeout S] [SUITE ARGS...]

Re-runs what expired or failed (rackgate/report/validity.py), every --every seconds, until SIGTERM
(or --cycles N cycles). Every other argument goes to the suite unchanged each cycle (--rack,
--atom-url, --tier, -m ...): attached with --atom-url, every cycle attaches again and the suite never
launches or stops a server. One watch per state directory: the lock (flock on DIR/watch.lock) is held
by the watch and inherited by its cycle's run, so a watch restarted after its own crash waits
(--lock-wait, default one cadence) for the run its predecessor left, then continues from
DIR/verdict.json; a second watch that cannot take the lock exits 2 naming the holder. SIGTERM (or
SIGINT) ends the current run (TERM to its process group, which ends what it started) and the watch
exits 0. Exit codes: 0 stopped or cycles done, 2 usage or the lock held.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import signal
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

from .cycle import LOCK, Watch


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rackgate watch", description="re-run what expired or failed, on a cadence",
                                 allow_abbrev=False)   # a suite option is never taken for one of these
    ap.add_argument("--every", type=float, default=300.0, metavar="S", help="seconds between cycles (default 300)")
    ap.add_argument("--cycles", type=int, default=0, metavar="N", help="stop after N cycles (default: until SIGTERM)")
    ap.add_argument("--state", default="reports/watch", metavar="DIR", help="verdict.json, history.jsonl, the lock")
    ap.add_argument("--max-age", type=float, default=None, metavar="S",
                    help="also re-run anything judged longer ago than this (over the rows' validity)")
    ap.add_argument("--metrics-file", default=None, metavar="FILE", help="node_exporter textfile rewritten every cycle")
    ap.add_argument("--lock-wait", type=float, default=None, metavar="S", help="wait this long for the lock (default: --every)")
    ap.add_argument("--run-timeout", type=float, default=7200.0, metavar="S", help="a cycle's run is ended past this")
    return ap


def _lock(path: Path, wait_s: float, stop: threading.Event) -> int | None:
    """The lock's fd (its holder's PID written in), or None when another holds it past `wait_s`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline or stop.wait(0.5):
                os.close(fd)
                return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "?"
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    try:
        o, suite_args = _parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    if o.every < 0 or o.cycles < 0 or (o.max_age is not None and o.max_age < 0):
        print("rackgate watch: --every, --cycles and --max-age take numbers >= 0", file=sys.stderr)
        return 2
    suite_args = [a for a in suite_args if a != "--"]   # the run's `rackgate` writes them as it does every argv
    state = Path(o.state).resolve()
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    fd = _lock(state / LOCK, o.every if o.lock_wait is None else o.lock_wait, stop)
    if fd is None:
        print(f"rackgate watch: {state / LOCK} is held by PID {_holder(state / LOCK)} (another watch, or the run "
              "of one that died): not starting", file=sys.stderr)
        return 2
    metrics = Path(o.metrics_file).resolve() if o.metrics_file else None
    w = Watch(state, suite_args, None if o.max_age is None else timedelta(seconds=o.max_age), metrics,
              o.run_timeout, lock_fd=fd, say=lambda s: print(s, flush=True))
    done = 0
    try:
        while not stop.is_set():
            rec = w.once(stopping=stop.is_set)
            done += 1
            print(f"rackgate watch: cycle {rec['cycle']}: {rec['why']}; ran {rec['ran']}"
                  + (f", verdict {rec['verdict']} in {rec['duration_s']:.0f} s" if rec.get("verdict") else ""), flush=True)
            if o.cycles and done >= o.cycles:
                break
            stop.wait(o.every)
    finally:
        w.stop_child()
        os.close(fd)
    if stop.is_set():
        print("rackgate watch: stopped (signal); state in " + str(state), flush=True)
    return 0
