"""The ids of rackgate's checks: `rackgate/checks/<module's path in the package>::<test>`, whatever
pytest's rootdir (rackgate/pytest_plugin.py names the modules so). The baseline's sources,
`-m regression`, `rackgate fleet --failed-only`, verdict.json, JUnit and Allure key on them."""
from __future__ import annotations

from pathlib import Path

CHECKS = Path(__file__).resolve().parent / "checks"
# A check's id starts with its path from the folder holding the package.
ID_PREFIX = "rackgate/checks/"
# Where ids recorded before the package move (tests/), or under a moved rootdir (none), had the checks.
_OLD_PREFIXES = ("tests/", "")


# Hand-written checks since declared (rackgate/checks/test_declared.py): their old module::test ->
# the declared item's, the parameter unchanged, so a baseline recorded before still names its check.
MOVED = {
    "fabric/test_links.py::test_accel_id": "test_declared.py::test_fab_accel_id",
    "fabric/test_links.py::test_link_training": "test_declared.py::test_fab_training",
    "fabric/test_errors.py::test_fab_errors": "test_declared.py::test_fab_errors",
    "serving/test_hw_errors.py::test_srv_hw_errors": "test_declared.py::test_srv_hw_errors",
    "serving/test_throttle.py::test_srv_throttle": "test_declared.py::test_srv_throttle",
    "serving/test_boot.py::test_launch_lint": "test_declared.py::test_srv_launch_lint",
    "serving/test_boot.py::test_boot": "test_declared.py::test_srv_boot",
    "serving/test_boot.py::test_rendezvous": "test_declared.py::test_srv_rendezvous",
    "serving/test_bench.py::test_wire_name_is_served": "test_declared.py::test_bench_preflight",
    "serving/test_bench.py::test_benchmark_measured_something": "test_declared.py::test_bench_result",
    "serving/test_bench.py::test_per_gpu_throughput": "test_declared.py::test_bench_aggregate",
    "accuracy/test_budget.py::test_reasoning_budget": "test_declared.py::test_acc_budget",
    "accuracy/test_fake_eplb.py::test_no_fake_eplb": "test_declared.py::test_acc_fake_eplb",
    "serving/test_logs.py::test_kv_budget": "test_declared.py::test_srv_kv",
    "serving/test_logs.py::test_translation": "test_declared.py::test_srv_translation",
    "serving/test_under_load.py::test_no_dp_sync_deadlock": "test_declared.py::test_srv_deadlock",
    "serving/test_golden.py::test_golden": "test_declared.py::test_srv_golden",
    "accuracy/test_gsm8k_quick.py::test_gsm8k_quick": "test_declared.py::test_acc_quick",
    "accuracy/test_under_load.py::test_accuracy_under_load": "test_declared.py::test_acc_under_load",
    "accuracy/test_gsm8k_full.py::test_gsm8k_lm_eval": "test_declared.py::test_acc_gsm8k",
}


def check_id(nodeid: str) -> str:
    """The id of one of rackgate's checks however it was recorded: `rackgate/checks/...` as it is,
    `platform/...` (pytest's own id under a moved rootdir or from a wheel) or `tests/...` (before
    the package move) as the check of the package it names, a check since declared (MOVED) as its
    declared item; any other id unchanged."""
    path, sep, rest = nodeid.partition("::")
    test, bracket, param = rest.partition("[")
    for old in (ID_PREFIX, *_OLD_PREFIXES):
        moved = MOVED.get(f"{path[len(old):]}::{test}") if path.startswith(old) else None
        if moved is not None:
            return f"{ID_PREFIX}{moved}{bracket}{param}"
    if nodeid.startswith(ID_PREFIX):
        return nodeid
    for old in _OLD_PREFIXES:
        if path.startswith(old) and path.endswith(".py") and (CHECKS / path[len(old):]).is_file():
            return f"{ID_PREFIX}{path[len(old):]}{sep}{rest}"
    return nodeid


def path_arg(nodeid: str) -> str:
    """A check's id as a test path pytest resolves from any directory (the module's absolute path)."""
    nodeid = check_id(nodeid)
    return str(CHECKS / nodeid[len(ID_PREFIX):]) if nodeid.startswith(ID_PREFIX) else nodeid
