"""The Slurm scheduler: one `sbatch --array` job, one task per rack (python -m rackgate.fleet.task
PLAN $SLURM_ARRAY_TASK_ID), progress from squeue while it waits, bounded by the timeout (then the
jobs are cancelled by id and their racks are UNKNOWN). A rack whose nodes are all Slurm nodes is
its own job holding them: `--exclusive --nodelist=<its nodes>`, so no user job lands on them during
acceptance (one array cannot give each task its own nodelist)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from .local import RC, exit_code_of
from .plan import RackRun

POLL_S = 1.0


class SlurmError(RuntimeError):
    pass


def _run(argv: list[str], timeout_s: float = 30) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} not found: Slurm's client tools are not installed (scripts/slurm_tools.sh)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(argv[:2])} did not answer in {timeout_s:.0f} s") from None
    if p.returncode != 0:
        raise SlurmError(f"{' '.join(argv[:2])}: exit {p.returncode}: {_last_line(p.stderr or p.stdout)}")
    return p.stdout


def _last_line(text: str) -> str:
    """Slurm's tools print the cause last (`sinfo: fatal: ...`): one line of it."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


def slurm_nodes() -> set[str]:
    return set(_run(["sinfo", "-h", "-N", "-o", "%N"]).split())


def script(plan: Path, index: str) -> str:
    """The batch script of one task: in the directory `rackgate fleet` ran in (as a local run's
    processes are), where relative test paths and reports/ mean what they meant there."""
    here = Path.cwd()
    return (f"#!/bin/bash\ncd {here}\n"
            f"exec {sys.executable} -m rackgate.fleet.task {plan} {index}\n")


def sbatch_lines(runs: list[RackRun], plan: Path, nodes: set[str]) -> list[tuple[list[str], str]]:
    """(sbatch argv, batch script) per job: the racks on Slurm nodes one job each, the rest one array."""
    out_dir = plan.parent
    jobs = []
    free = [i for i, r in enumerate(runs) if not (r.hosts and set(r.hosts) <= nodes)]
    for i, r in enumerate(runs):
        if i not in free:
            jobs.append((["sbatch", "--parsable", f"--job-name=rackgate-{r.name}", "--exclusive",
                          f"--nodelist={','.join(r.hosts)}", f"--nodes={len(r.hosts)}",
                          f"--output={out_dir / f'slurm-{r.name}.out'}"], script(plan, str(i))))
    if free:
        jobs.append((["sbatch", "--parsable", "--job-name=rackgate-fleet", f"--array={','.join(map(str, free))}",
                      f"--output={out_dir / 'slurm-%A_%a.out'}"], script(plan, "$SLURM_ARRAY_TASK_ID")))
    return jobs


def submit(jobs: list[tuple[list[str], str]]) -> list[str]:
    ids = []
    for argv, text in jobs:
        try:
            p = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60, env=os.environ.copy())
        except FileNotFoundError:
            raise SlurmError("sbatch not found: Slurm's client tools are not installed (scripts/slurm_tools.sh)") from None
        if p.returncode != 0:
            raise SlurmError(f"sbatch: exit {p.returncode}: {_last_line(p.stderr or p.stdout)}")
        ids.append(p.stdout.strip().split(";")[0])
    return ids


def wait(ids: list[str], timeout_s: float, progress: Callable[[str], object] = print) -> bool:
    """Until no task of the jobs is queued or running; False when the timeout came first (then
    the jobs are cancelled by id)."""
    end, last = time.monotonic() + timeout_s, None
    while True:
        try:
            out = _run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i %T"])
        except SlurmError as e:
            if "Invalid job id" not in str(e):
                raise
            out = ""  # the jobs left the queue (finished and purged)
        states: dict[str, int] = {}
        for line in out.splitlines():
            _, _, state = line.partition(" ")
            states[state] = states.get(state, 0) + 1
        summary = ", ".join(f"{n} {s.lower()}" for s, n in sorted(states.items())) or "all done"
        if summary != last:
            progress(f"rackgate fleet: slurm job {','.join(ids)}: {summary}")
            last = summary
        if not states:
            return True
        if time.monotonic() > end:
            _run(["scancel", *ids])
            progress(f"rackgate fleet: past {timeout_s:.0f} s: cancelled job {','.join(ids)}")
            return False
        time.sleep(POLL_S)


def run(runs: list[RackRun], plan: Path, timeout_s: float, progress: Callable[[str], object] = print) -> dict[str, int | None]:
    for r in runs:
        (Path(r.results)).mkdir(parents=True, exist_ok=True)
        (Path(r.results) / RC).unlink(missing_ok=True)
    nodes = slurm_nodes()
    ids = submit(sbatch_lines(runs, plan, nodes))
    progress(f"rackgate fleet: submitted {len(runs)} rack(s) as slurm job(s) {', '.join(ids)}")
    wait(ids, timeout_s, progress)
    return {r.name: exit_code_of(r) for r in runs}
