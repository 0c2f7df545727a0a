"""The local scheduler: every rack's run as a process here, all at once, each bounded by the
timeout (a run past it is ended by its process group and leaves no verdict: UNKNOWN)."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable

from ..transport import interrupt
from ..transport.procs import kill_group
from .plan import RackRun

RC = "rc"            # the run's exit code, written next to its results (absent: it never finished)
OUTPUT = "output.txt"
STOP_GRACE_S = interrupt.BOUND_S + 5.0  # after TERM the run stops what it started and writes its reports (bounded), then KILL


def run(runs: list[RackRun], timeout_s: float, progress: Callable[[str], object] = print) -> dict[str, int | None]:
    """{rack: exit code, None where the run overran and was ended}."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for r in runs:
        d = Path(r.results)
        d.mkdir(parents=True, exist_ok=True)
        (d / RC).unlink(missing_ok=True)
        with open(d / OUTPUT, "w") as out:
            procs[r.name] = subprocess.Popen(r.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True)
    end = time.monotonic() + timeout_s
    codes: dict[str, int | None] = {}
    try:
        while len(codes) < len(procs):
            for name, p in procs.items():
                if name not in codes and p.poll() is not None:
                    codes[name] = p.returncode
                    progress(f"rackgate fleet: {name} finished (exit {p.returncode}); {len(codes)}/{len(procs)} done")
            if len(codes) < len(procs) and time.monotonic() > end:
                for name, p in procs.items():
                    if name not in codes:
                        kill_group(p, grace=STOP_GRACE_S)
                        codes[name] = None
                        progress(f"rackgate fleet: {name} ran past {timeout_s:.0f} s: ended (UNKNOWN)")
            time.sleep(0.2)
    finally:
        for p in procs.values():
            kill_group(p, grace=STOP_GRACE_S)
    for r in runs:
        if codes.get(r.name) is not None:
            (Path(r.results) / RC).write_text(f"{codes[r.name]}\n")
    return codes


def exit_code_of(r: RackRun) -> int | None:
    """A rack's last exit code from its results (None: its run never finished)."""
    f = Path(r.results) / RC
    text = f.read_text().strip() if f.exists() else ""
    return int(text) if text.lstrip("-").isdigit() else None
