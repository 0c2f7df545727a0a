"""`rackgate fleet --remediate`: the options to a loop (remediate.py holds its decisions), the real
re-test (the rack's own run of only the tray's failing items) and remedy (the rack file's command
under bash), the dry run's Slurm (read for real, written only in memory) and the one-loop lock."""
from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from ..config.remediate import Remedy
from ..ids import path_arg
from ..report import verdict_file
from ..secrets import redact
from ..transport.procs import kill_group
from . import gather, local, plan, slurm_nodes
from .audit import LOG as AUDIT_LOG
from .audit import AuditLog
from .remediate import FAIL, PASS, Guard, Loop, Retest, SlurmLike, Target, targets
from .slurm import SlurmError

OUTPUT_TAIL = 2000      # characters of a remedy's output kept as evidence


# --- the real re-test and remedy --------------------------------------------------------------
def retest_with(results: Path, timeout_s: float, say: Callable[[str], object] = print) -> Retest:
    """A re-test: the rack's own run (its plan's argv) of only the tray's failing items, its results
    under RESULTS/remediate/<rack>/<node>-<step>/."""
    runs = {r.name: r for r in plan.load_plan(results / plan.PLAN)}

    def retest(t: Target, step: str) -> tuple[str, list[dict[str, str]]]:
        rr = runs.get(t.rack)
        if rr is None:
            why = f"{results / plan.PLAN} has no rack {t.rack}"
            return verdict_file.UNKNOWN.file, [{"test": x, "outcome": "not run", "seen": why} for x in t.tests]
        argv = [a for a in rr.argv if not plan.is_test_path(a)] + sorted({path_arg(x) for x in t.tests})
        run = plan.RackRun(t.rack, rr.rack_file, str(results / "remediate" / t.rack / f"{t.node}-{step}"), argv, rr.hosts)
        code = local.run([run], timeout_s, progress=say)[t.rack]
        v = gather.rack_verdict(run, code)
        got = {i["test"]: i for i in v.get("items", [])}
        items = [{"test": x, "outcome": got[x]["outcome"] if x in got else "not run",
                  "seen": got[x]["seen"][:300] if x in got else ""} for x in t.tests]
        outcomes = {i["outcome"] for i in items}
        return (PASS if outcomes == {PASS} else FAIL if FAIL in outcomes else verdict_file.UNKNOWN.file), items
    return retest


def run_remedy(t: Target, m: Remedy) -> dict[str, Any]:
    env = {**os.environ, "RACKGATE_NODE": t.node, "RACKGATE_HOST": t.host, "RACKGATE_SLURM_NODE": t.slurm,
           "RACKGATE_ROWS": " ".join(dict.fromkeys(f["row"] for f in t.findings)), "RACKGATE_RACK": t.rack}
    started = time.monotonic()
    try:
        p = subprocess.Popen(["bash", "-c", m.command], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    except OSError as e:
        return {"exit": 127, "output": f"could not start bash: {e}", "seconds": 0.0}
    try:
        text, _ = p.communicate(timeout=m.timeout_s)
        code = p.returncode
    except subprocess.TimeoutExpired:
        kill_group(p)
        text, code = f"(ended: ran past its timeout_s {m.timeout_s:.0f} s)", 124
    return {"exit": code, "output": redact(text or "")[-OUTPUT_TAIL:], "seconds": round(time.monotonic() - started, 1)}


# --- the command ------------------------------------------------------------------------------
def command(o: Any) -> int:
    """`rackgate fleet --remediate --results DIR [...]` (fleet/cli.py parses the options)."""
    results = Path(o.results)
    log_path = Path(o.log) if o.log else results / AUDIT_LOG
    if o.mark_fixed:
        log = AuditLog(log_path)
        rec = log.add("operator-fixed", "done", node=o.mark_fixed, by=os.environ.get("SUDO_USER") or os.environ.get("USER", ""),
                      note=o.note or "")
        print(f"rackgate remediate: {o.mark_fixed} marked fixed at {rec['ts']} in {log_path}")
        return 0
    if not 0 < o.max_drain_share <= 1:
        raise ValueError(f"--max-drain-share {o.max_drain_share}: a share of the fleet, above 0 and at most 1")
    if o.max_actions < 1 or o.per <= 0 or o.validity < 0 or o.drain_wait < 0:
        raise ValueError("--max-actions is at least 1, --per above 0, --validity and --drain-wait at least 0")
    guard = Guard(o.max_drain_share, o.max_actions, o.per, o.validity, o.timeout, o.drain_wait)
    fleet = gather.load(results)
    ts, fleet_nodes = targets(fleet, guard)
    slurm: SlurmLike = slurm_nodes.Slurm()
    with contextlib.ExitStack() as held:
        if o.dry_run:
            print(f"rackgate remediate: dry run: the plan for {len(ts)} tray(s) with findings; nothing is done or logged")
            slurm = DryRun(slurm)
        else:
            held.enter_context(_only_loop(log_path))
        log = AuditLog(log_path, write=not o.dry_run)
        loop = Loop(slurm, log, guard, retest_with(results, o.timeout), run_remedy, dry_run=o.dry_run)
        out = loop.run(ts, fleet_nodes)
    code = out.exit_code()
    print(f"rackgate remediate: resumed {', '.join(out.resumed) or 'none'}; drained with findings "
          f"{', '.join(dict.fromkeys(out.drained)) or 'none'}; left alone (someone else's) {', '.join(out.left_alone) or 'none'}"
          + (f"; stopped by a guardrail ({loop.stop})" if out.guardrail else "")
          + "".join(f"\n  could not: {p}" for p in out.problems) + f" (exit {code}; log {log_path})")
    return code


@contextlib.contextmanager
def _only_loop(log_path: Path) -> Iterator[None]:
    """One loop at a time on one log: a second is refused (ValueError), never run beside it."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path.with_name(log_path.name + ".lock"), "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"another rackgate fleet --remediate holds {log_path}: one loop at a time") from None
        yield


class DryRun:
    """--dry-run: the cluster's states read for real, every write only printed (and kept in memory
    so the plan's later steps see it)."""

    def __init__(self, real: SlurmLike):
        self.real = real
        self.now: dict[str, slurm_nodes.NodeState] | None = None

    def states(self) -> dict[str, slurm_nodes.NodeState]:
        if self.now is None:
            try:
                self.now = self.real.states()
            except SlurmError as e:
                print(f"rackgate remediate: no Slurm to read ({e}): the plan below assumes it lists no node")
                self.now = {}
        return self.now

    def drain(self, node: str, reason: str) -> None:
        self.states()[node] = slurm_nodes.NodeState(node, "drained", reason)

    def resume(self, node: str) -> None:
        self.states()[node] = slurm_nodes.NodeState(node, "idle", "")
