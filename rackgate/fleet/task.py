"""One rack's run inside a scheduler's task: `python -m rackgate.fleet.task PLAN [INDEX]` runs the
plan's INDEXth rack (default: $SLURM_ARRAY_TASK_ID or Kubernetes' $JOB_COMPLETION_INDEX) and exits
with its exit code."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .local import OUTPUT, RC
from .plan import load_plan


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
    with open(d / OUTPUT, "w") as out:
        rc = subprocess.run(r.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    (d / RC).write_text(f"{rc}\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
