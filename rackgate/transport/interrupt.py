"""A run stopped by a signal ends the way Ctrl-C ends it (issue 52).

SIGTERM (a scheduler's time limit: Slurm sends it, then SIGKILL after KillWait, 30 s by default; a
container stop; `kill`) and SIGHUP (the terminal or ssh session went away) raise `Interrupted`, a
KeyboardInterrupt, in the main thread: pytest ends the test loop as on Ctrl-C, the session's
teardown stops what rackgate started (the launched server, the pair runs), and the session's end
writes junit.xml, the Allure files and verdict.json with the items judged so far, the run marked
interrupted with the signal named (rackgate/hooks/as_they_finish.py). Then the process ends as
the signal would have ended it (exit status 128 + the signal's number; a shell shows 143 for SIGTERM).

Bounded: the commands in flight on the nodes are ended at once (their process groups: the item in
flight is lost, the teardown is not held by them), and a watchdog ends the process BOUND_S after
the first signal whatever the teardown is doing -- first rewriting the reports from what was judged
(`last_words`), then stopping what was started, each bounded -- well inside Slurm's KillWait. A
second signal (SAME_STOP_S after the first or later) ends the run at once (what was started is
stopped first, bounded): the reports on disk are those written as each item finished, which lose at
most the item in flight.
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Callable

from .procs import REGISTRY

SIGNALS = (signal.SIGTERM, signal.SIGHUP)
BOUND_S = 20.0      # from the first signal to the process's end, whatever its teardown does (< KillWait 30 s)
STOP_BOUND_S = 5.0  # what was started, stopped, at most this long when the bound or a second signal ends the run
# A second signal this soon after the first is the same stop delivered twice (a scheduler signals every
# process of the job, and the wrapper that started the run -- rackgate.fleet.task -- forwards it): not "end now".
SAME_STOP_S = 2.0
WHAT = {
    signal.SIGTERM: "SIGTERM (a scheduler's time limit, a container stop or a kill)",
    signal.SIGHUP: "SIGHUP (the terminal or session went away)",
    signal.SIGINT: "SIGINT (Ctrl-C)",
}

_received: list[int] = []
_received_at: list[float] = []
_finishing: list[bool] = []
# Called (bounded, in order) when the bound ends the run before the session's end wrote the reports:
# each rewrites its report from what was judged so far, given the signal's name.
last_words: list[Callable[[str], None]] = []


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (pytest handles it as Ctrl-C)."""

    def __init__(self, signum: int):
        super().__init__(f"{signal.Signals(signum).name} received: stopping what rackgate started, "
                         f"writing the reports of the items judged so far")
        self.signum = signum


def received() -> str:
    """The name of the first signal that stopped the run ('' when none did)."""
    return signal.Signals(_received[0]).name if _received else ""


def describe(name: str) -> str:
    """A signal's name as the reports say it: what usually sends it."""
    try:
        return WHAT.get(signal.Signals[name], name)
    except KeyError:
        return name


def begin() -> None:
    """A session starts (the plugin's configure): a signal raises into it again."""
    _finishing.clear()


def finishing() -> None:
    """The test loop is over and the reports are being written: a signal from now on does not raise
    into them (the bound still holds)."""
    _finishing.append(True)


def _stop_all_bounded(bound_s: float) -> None:
    t = threading.Thread(target=REGISTRY.stop_all, name="rackgate-stop", daemon=True)
    t.start()
    t.join(bound_s)


def _say(text: str) -> None:
    try:
        sys.stderr.write(f"rackgate: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _die(signum: int) -> None:
    """End the process as the signal would have (its default action), or with 128+signum."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # pragma: no cover - the default action of SIGTERM/SIGHUP ended us above


def _watchdog(signum: int, bound_s: float) -> None:
    time.sleep(bound_s)
    _say(f"{signal.Signals(signum).name}: the teardown ran past {bound_s:g} s; writing the reports of the items "
         f"judged so far and ending now")
    for fn in list(last_words):
        t = threading.Thread(target=fn, args=(signal.Signals(signum).name,), daemon=True)
        t.start()
        t.join(STOP_BOUND_S)
    _stop_all_bounded(STOP_BOUND_S)
    _die(signum)


def _at_exit(signum: int) -> None:
    REGISTRY.stop_all()
    _die(signum)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _received and time.monotonic() - _received_at[0] < SAME_STOP_S:
        return      # the same stop, delivered twice
    if _received:   # a second signal: end now
        _say(f"{signal.Signals(signum).name} again: ending now (the reports on disk hold every item that finished)")
        _stop_all_bounded(STOP_BOUND_S)
        _die(signum)
    _received.append(signum)
    _received_at.append(time.monotonic())
    threading.Thread(target=_watchdog, args=(signum, BOUND_S), name="rackgate-bound", daemon=True).start()
    atexit.register(_at_exit, signum)   # runs first (last registered): the exit status names the signal
    REGISTRY.stop_local()
    if not _finishing:
        raise Interrupted(signum)


def install() -> None:
    """SIGTERM and SIGHUP end the run as Ctrl-C does (main thread only: where Python runs handlers)."""
    if threading.current_thread() is threading.main_thread():
        for sig in SIGNALS:
            signal.signal(sig, _on_signal)
