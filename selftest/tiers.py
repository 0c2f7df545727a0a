"""The self-test tiers: what each self-test module costs, as a pytest marker, and what follows
from it (selftest/conftest.py): the check that every module carries exactly one, the order in
which xdist hands the modules out, and the guard that keeps the `unit` tier free of processes.

Mark a module with `pytestmark = pytest.mark.<tier>` (in a list with its other marks):

- unit: nothing outside this process -- no subprocess, no sim boot, no listening socket
  (parsers, judges, properties, config, the catalogue). `python3 -m pytest selftest -m unit`.
- suite: runs the suite on the sim (selftest/harness.py), boots the sim, or starts any other
  process (a tool, ruff, mypy, a pytest collection).
- matrix: the fault matrices (a pool of suite runs each).
- realengine: a real model server (transformers serve on CPU), aiperf, lm-eval against it.
- system: sshd, dockerd, Slurm, network namespaces.

docs/DEVELOPING.md says which tier to run while changing what.

The schedule under `pytest -n 5 --dist loadgroup` (the README's self-test command) is this module's
three tables and `order`, nothing else: SHARED names the modules that run on one worker together
(their session fixtures made once), every other module is a group of its own; LONG lists the long
groups' measured seconds, handed out first, longest first; WAITS names the groups that mostly wait on
a clock, handed out while the longest groups still run; the rest follow by tier. xdist's own
reordering (groups by number of tests) is switched off (selftest/conftest.py): it handed the
one-test modules, the longest of all, out last. `python3 -m selftest.tiers JUNIT` prints the
groups' seconds from a whole run's junit to refresh LONG with.
"""
from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

# Tier -> (what the module's tests cost, the order xdist hands its modules out: lower first).
# The longest groups go first (a matrix pool, the real engine's servers) so the other workers
# work through the rest beside them; the unit tier last (it fills the gaps at the end).
TIERS: dict[str, tuple[str, int]] = {
    "matrix": ("fault-matrix runners: a pool of suite runs on the sim", 0),
    "realengine": ("a real model server (transformers serve on CPU), aiperf, lm-eval", 1),
    "system": ("sshd, dockerd, Slurm, network namespaces", 2),
    "suite": ("runs the suite on the sim (selftest/harness.py), boots the sim, or starts other processes", 3),
    "unit": ("no subprocess, no sim boot, no server: parsers, judges, properties, config, catalogue", 4),
}


# Modules that share one xdist group (one worker, their session-scoped fixtures made once there).
# The real-engine modules that borrow the session's model servers (`serve` in
# selftest/realengine/conftest.py) are three groups of about equal length, each with its own servers:
# a server's start is ~6 CPU s, its tests' generation is what costs; as one group they were the
# run's critical path (1,550 s on one worker, 2026-12-05), as two the run's tail (486 s and 410 s of
# wall on one worker each, the machine ~1.5 cores busy). Three groups start 9 session servers where
# two started 7 (the partly-broken engines: healthy, bang, reasoning-template; the bang and golden
# tests: bang, healthy, noisy-layer; the suite runs: healthy, nan-norm, reasoning-template): +2
# starts, ~12 CPU s (wave 10, docs/performance.md). test_launch.py and test_launch_ctrl_c.py start
# their own engines: groups of their own.
SHARED: dict[str, tuple[str, ...]] = {
    "realengine-gate": ("selftest.realengine.test_partly_broken",),
    # test_batch_engine (issue 50): SRV-BATCH on the golden tests' healthy and noisy-layer engines
    "realengine-golden": ("selftest.realengine.test_gate_command", "selftest.realengine.test_golden_engine",
                          "selftest.realengine.test_batch_engine"),
    "realengine-suite": ("selftest.realengine.test_suite_on_engine", "selftest.realengine.test_engine"),
    # the wheel self-tests: one wheel built and installed into a venv for both (~7 CPU s a build;
    # selftest/conftest.py wheel_install)
    "wheel": ("selftest.test_typed_forms", "selftest.test_wheel"),
}

# The long groups' summed test seconds in the last whole run (the junit of `.ci/run` on wave 11's final
# main fda687b, 2026-12-05: 5 workers on 2 cores, nothing else on the machine, 733 s of pytest; `python3
# -m selftest.tiers JUNIT`, the groups of 12 s or more; the six groups wave 12 cut scaled by their CPU
# before/after: realengine-suite, -gate, -golden, test_attach, test_golden_suite, test_ids_rootdir):
# handed out first, longest first, so that the last groups to start are short ones and the workers end
# together (longest-processing-time first; WAITS and `order` say where the waiting groups go). A group
# not listed follows, in its tier's order.
# Refresh: `python3 -m selftest.tiers reports/selftest-junit.xml` after a whole run.
LONG: dict[str, int] = {
    "realengine-suite": 390,
    "realengine-gate": 370,
    "selftest.test_fault_matrix": 330,
    "selftest.realengine.test_launch": 261,
    "realengine-golden": 255,  # 195 + test_batch_engine's ~60 s of requests (engines shared; issue 50, unmeasured in a whole run)
    "tool_failures_fabric": 167,
    "selftest.test_cleanup": 123,
    "wheel": 117,
    "selftest.test_recipe_dry_run": 112,
    "selftest.test_recipe_dry_run_scopes": 110,  # issue 56's three more scopes, estimated as the module above
    "selftest.serving.test_golden_suite": 90,
    "selftest.regression.test_regression": 77,
    "selftest.survey.test_survey_equals_items": 54,
    "selftest.serving.test_boot_watch": 52,
    "selftest.survey.test_sim18": 52,
    "selftest.test_attach": 50,
    "selftest.accuracy.test_accuracy_hang": 49,
    "selftest.accuracy.test_under_load_reads": 44,
    "selftest.fabric.test_sim_fabric": 38,
    "selftest.serving.test_hang_attached": 37,
    "selftest.foreign.test_foreign_rack": 35,
    "selftest.serving.test_hang_record_run": 34,
    "selftest.test_xdist": 32,
    "tool_failures_platform": 31,
    "selftest.fabric.test_bmc_card0": 29,
    "selftest.reports.test_fleet_overview": 28,
    "selftest.fabric.test_collective_probe": 27,
    "selftest.watch.test_watch": 30,   # wave 13 (issue 54): its -n 2 duration, not yet a whole run's
    "selftest.accuracy.test_sim_e2e": 25,
    "selftest.properties.test_parsers_hold": 25,
    "selftest.serving.test_deadlock_rule": 21,
    "selftest.fleet.test_slurm_fleet": 19,
    "selftest.reports.test_fleet": 16,
    "selftest.test_bad_input": 14,
    "selftest.watch.test_prometheus": 13,   # wave 13 (issue 54), as test_watch
    "selftest.serving.test_hang_rule": 13,
    "selftest.test_transport": 13,
    "selftest.test_ids_rootdir": 12,
    "selftest.watch.test_tier_runs": 12,   # wave 13 (issue 54), as test_watch
    "selftest.test_transport_runners": 12,
    "selftest.test_options": 12,
    "selftest.test_dependencies": 12,
}


# The groups that mostly wait on a clock, not on the CPU: a hang's floor, a request's deadline, a boot
# watch's budget, a transport's timeout, Slurm's and a collective's joins. Their wall seconds are 5-120
# times their CPU seconds on five workers (a CPU-bound group's ~2.5 times: the a0a5c27 profile,
# 2026-12-05, benchmarks/cpu_per_test.py, in brackets CPU/wall). A wait costs nothing while CPU-bound
# groups run beside it, and the run's end when it is left to the tail: wave 11's quiet runs ended with
# test_hang_attached, test_hang_record_run and the deadlock rule beside the unit tier, fewer busy workers
# than cores, ~30 s above the CPU floor. So they are handed out while the longest groups (WAITS_AFTER
# seconds or more) still run, right after them, before the other long groups.
WAITS_AFTER = 150
WAITS: dict[str, str] = {
    "selftest.serving.test_boot_watch": "a boot's budget, the log's silence (2.7/50)",
    "selftest.accuracy.test_accuracy_hang": "a hung rank's floor under lm-eval and the quick gate (4.7/54)",
    "selftest.serving.test_hang_attached": "a hung rank's floor, attached (3.0/39)",
    "selftest.serving.test_hang_record_run": "a hung rank's floor while recording (2.7/39)",
    "selftest.fabric.test_sim_fabric": "link training and the collective's join (4.4/36)",
    "selftest.fabric.test_collective_probe": "the collective probe's join (6.0/31)",
    "selftest.fleet.test_slurm_fleet": "Slurm's scheduling of an array job (1.7/26)",
    "selftest.serving.test_deadlock_rule": "requests in flight past the floor (3.1/20)",
    "selftest.test_transport": "a transport's timeouts (0.1/13)",
    "selftest.serving.test_hang_rule": "a slow rank's stream and a hung one's floor (0.0/11)",
    "selftest.accuracy.test_quick_hang": "the quick gate's hung question (0.2/10)",
}


def group_of(module_name: str) -> str:
    """The xdist group of a module's tests (one a test names itself with xdist_group wins)."""
    return next((g for g, mods in SHARED.items() if module_name in mods), module_name)


def tiers_of(node) -> list[str]:
    """The tier marks a module or an item carries (a module's pytestmark reaches every item of it)."""
    return [name for name in TIERS if node.get_closest_marker(name) is not None]


def problem(module_name: str, tiers: list[str]) -> str:
    """'' when a module carries exactly one tier, else one line naming it and what to do."""
    if len(tiers) == 1:
        return ""
    got = "no tier mark" if not tiers else f"{len(tiers)} tier marks ({', '.join(tiers)})"
    return (f"self-test module {module_name} carries {got}: give it exactly one of "
            f"{', '.join(TIERS)} (`pytestmark = pytest.mark.<tier>`; selftest/tiers.py)")


def order(item) -> tuple[int, int, int]:
    """An item's place in the hand-out order: the groups of WAITS_AFTER s or more first, then the
    WAITS groups, then the rest; within each, its group's LONG seconds (longest first), then its
    tier's place (a stable sort keeps the order within a tier and a module)."""
    mark = item.get_closest_marker("xdist_group")
    group = (mark.args[0] if mark.args else mark.kwargs.get("name", "")) if mark is not None else ""
    found = tiers_of(item)
    seconds = LONG.get(group, 0)
    phase = 1 if group in WAITS else 0 if seconds >= WAITS_AFTER else 2
    return phase, -seconds, TIERS[found[0]][1] if len(found) == 1 else len(TIERS)


def group_seconds(junit_xml: str) -> dict[str, float]:
    """Summed test seconds per xdist group in a whole run's junit (a test's group is the `@NAME`
    suffix xdist gives its name, else its module, joined as SHARED joins them)."""
    import xml.etree.ElementTree as ET
    out: dict[str, float] = {}
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        name, module = case.get("name", ""), case.get("classname", "")
        at = name.rfind("@")
        group = name[at + 1:] if at > name.rfind("]") else group_of(module)
        if group == "realengine":  # the one real-engine group before wave 5: split as SHARED says
            group = group_of(module)
        out[group] = out.get(group, 0.0) + float(case.get("time") or 0)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


class OutsideUnitTier(RuntimeError):
    """A `unit` test started a process, built the sim or listened on a socket: mark it otherwise."""


@contextmanager
def unit_guard(nodeid: str) -> Iterator[None]:
    """While a `unit` test runs (its fixtures included): starting a process, building the sim or
    listening on a socket raises OutsideUnitTier naming the test, so a mis-marked test fails
    loudly instead of making the quick tier slow."""
    def refuse(what: str):
        def refused(*args, **kwargs):
            raise OutsideUnitTier(f"{nodeid} is marked `unit` but {what}: mark its module `suite` "
                                  "(or the tier it belongs to), or move the test (selftest/tiers.py)")
        return refused

    from rackgate.sim import rack as sim_rack
    patches = [(subprocess.Popen, "__init__", refuse("started a subprocess")),
               (socket.socket, "listen", refuse("listened on a socket (a server)")),
               (sim_rack, "build", refuse("built the sim"))]
    patches += [(os, name, refuse(f"called os.{name}"))
                for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve")
                if hasattr(os, name)]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    try:
        for obj, name, new in patches:
            setattr(obj, name, new)
        yield
    finally:
        for obj, name, old in saved:
            setattr(obj, name, old)


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 2:
        sys.exit("usage: python3 -m selftest.tiers JUNIT_XML (a whole self-test run's junit)")
    for g, sec in group_seconds(sys.argv[1]).items():
        if sec >= 12:
            print(f"    {g!r}: {sec:.0f},")
