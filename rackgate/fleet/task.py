"""One rack's run inside a scheduler's task: `python -m rackgate.fleet.task PLAN [INDEX]` runs the
plan's INDEXth rack (default: $SLURM_ARRAY_TASK_ID or Kubernetes' $JOB_COMPLETION_INDEX) and exits
with its exit code.

Stopped (Slurm's time limit or scancel: SIGTERM to every process of the job; a container stop:
SIGTERM to its first process only): the signal is passed on to the run, which ends as Ctrl-C ends it
and writes its reports marked interrupted (rackgate/transport/interrupt.py: a signal delivered to it
twice at once is one stop); this task waits for it within the run's own bound, then writes its exit
code (128 + the signal's number when the signal ended it) and ends the same way."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from ..transport import interrupt
from .local import OUTPUT, RC
from .plan import load_plan

WAIT_S = interrupt.BOUND_S + 5.0   # the run's own bound from the signal to its end, and a margin


def status(rc: int) -> int:
    """A child's return code as a shell's exit status (ended by signal N: 128 + N)."""
    return 128 - rc if rc < 0 else rc


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 1:
        args.append(os.environ.get("SLURM_ARRAY_TASK_ID") or os.environ.get("JOB_COMPLETION_INDEX") or "")
    runs = load_plan(Path(args[0])) if len(args) == 2 and Path(args[0]).is_file() else []
    if len(args) != 2 or not args[1].isdigit() or int(args[1]) >= len(runs):
        print("usage: python -m rackgate.fleet.task PLAN.json [INDEX] (a plan file and an index into it)", file=sys.stderr)
        return 2
    r = runs[int(args[1])]
    d = Path(r.results)
    d.mkdir(parents=True, exist_ok=True)
    stopped: list[int] = []
    with open(d / OUTPUT, "w") as out:
        proc = subprocess.Popen(r.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def pass_on(signum: int, frame: FrameType | None) -> None:
            if not stopped:
                stopped.append(signum)
                proc.send_signal(signum)

        for sig in interrupt.SIGNALS:
            signal.signal(sig, pass_on)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            rc = _wait_bounded(proc)
        if stopped and proc.poll() is None:
            rc = _wait_bounded(proc)
    (d / RC).write_text(f"{status(rc)}\n")
    return status(rc)


def _wait_bounded(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
