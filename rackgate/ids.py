"""The ids of rackgate's checks. A declared check's item is its row, then its place:
`PLAT-DRIVER::node1`, `FAB-STATE::node1-card2` (GPU 2 of node1), `FAB-P2P::node1-node2` (a ubench07
pair), `SRV-GOLDEN::node3-dp11` (DP rank 11, on node3), `SRV-BOOT::server` (the server's one item)
-- the same from a checkout, a wheel or any rootdir (rackgate/checks/declared.py: a collector per
row, an item per place). `-k PLAT-DRIVER` selects a row, `-k node3` every item on node3, and a row
or an item is a test path (`pytest PLAT-DRIVER`, `rackgate SRV-GOLDEN::node3-dp11`: path_arg). A
hand-written check keeps `rackgate/checks/<module's path in the package>::<test>` (rackgate/
pytest_plugin.py names the modules so). The baseline's sources, `-m regression`, `rackgate fleet
--failed-only`, verdict.json, JUnit and Allure key on them.

The one migration (check_id): an id recorded before -- `rackgate/checks/test_declared.py::
test_plat_driver[node1]` (the declared checks' module until issue 56), a hand-written check since
declared (MOVED), `platform/...` (a moved rootdir, a wheel) or `tests/...` (before the package
move) -- reads as the id the check has now. Baselines (their facts' sources), fleet results and
the fault matrix read ids through it; `python -m rackgate.registry.migrate` rewrites files (the
fault matrix's TOML, self-tests) with it.
"""
from __future__ import annotations

import re
from collections.abc import Container
from pathlib import Path

CHECKS = Path(__file__).resolve().parent / "checks"
# A hand-written check's id starts with its path from the folder holding the package.
ID_PREFIX = "rackgate/checks/"
# Where ids recorded before the package move (tests/), or under a moved rootdir (none), had the checks.
_OLD_PREFIXES = ("tests/", "")
# The file the declared checks' collector stands on: a test path for pytest (path_arg), never in an id.
DECLARED = CHECKS / "declared.py"
# The place of a "server" check's one item (and of a "rank" check's where the ranks are not known).
SERVER = "server"
# The declared checks' items were `rackgate/checks/test_declared.py::test_<row: lower, "_" for "-">[param]`
# up to issue 56.
DECLARED_MODULE = "test_declared.py"
_ROW_ID = re.compile(r"[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+")


# Hand-written checks since declared: their old module::test -> the declared item's old name (its
# row: row_of_test), the parameter unchanged, so a baseline recorded before still names its check.
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


def row_of_test(test: str) -> str:
    """The row a declared item's old test name was made from: test_plat_driver -> PLAT-DRIVER."""
    return test.removeprefix("test_").upper().replace("_", "-")


def old_test_name(row: str) -> str:
    """A declared row's test name before issue 56 (PLAT-DRIVER -> test_plat_driver): an old `-k` of it
    still selects the row's items."""
    return "test_" + row.lower().replace("-", "_")


def is_row_id(nodeid: str) -> bool:
    """Whether an id names a declared row, or one item of it: PLAT-DRIVER, PLAT-DRIVER::node1."""
    return bool(_ROW_ID.fullmatch(nodeid.partition("::")[0]))


def place_of(nodeid: str) -> str:
    """The place an item's id names: `PLAT-SHM::node2` -> node2, `SRV-BOOT::server` -> server; a
    hand-written test's parameter (`...::test_x[node2]` -> node2); "" where it names none."""
    if is_row_id(nodeid):
        return nodeid.partition("::")[2]
    _, bracket, param = nodeid.partition("[")
    return param.removesuffix("]") if bracket else ""


def short(nodeid: str) -> str:
    """An item's id as a person reads it in one line: a declared item's whole id (`PLAT-SHM::node2`),
    a hand-written test's name with its parameter (`...::test_x[node2]` -> `test_x[node2]`)."""
    return nodeid if is_row_id(nodeid) else nodeid.rpartition("::")[2]


def check_of(nodeid: str) -> str:
    """What an item is an item of: its row (`PLAT-SHM::node2` -> PLAT-SHM), a test function without
    its parameters (`...::test_x[node2]` -> `...::test_x`)."""
    return nodeid.partition("::")[0] if is_row_id(nodeid) else nodeid.partition("[")[0]


def _row_item(test: str, param: str, servers: Container[str]) -> str:
    """An old declared test name and parameter as the row's id (no parameter: the whole row, or the
    server's one item for a row in `servers`) or its item's."""
    r = row_of_test(test)
    return f"{r}::{param}" if param else f"{r}::{SERVER}" if r in servers else r


def check_id(nodeid: str, servers: Container[str] = ()) -> str:
    """The id of one of rackgate's checks however it was recorded: a declared item's old id
    (`rackgate/checks/test_declared.py::test_plat_driver[node1]`, a hand-written check since declared:
    MOVED) as its row and place (`PLAT-DRIVER::node1`; without a parameter the whole row -- or, for
    a row of `servers`, the "server" checks, its one item `SRV-BOOT::server`); `rackgate/checks/...`
    as it is; `platform/...` (pytest's own id under a moved rootdir or from a wheel) or `tests/...`
    (before the package move) as the check of the package it names; any other id unchanged."""
    path, sep, rest = nodeid.partition("::")
    test, bracket, param = rest.partition("[")
    param = param.removesuffix("]") if bracket else ""
    for old in (ID_PREFIX, *_OLD_PREFIXES):
        if not (sep and path.startswith(old)):
            continue
        moved = MOVED.get(f"{path[len(old):]}::{test}")
        if moved is not None:
            return _row_item(moved.partition("::")[2], param, servers)
        if path[len(old):] in (DECLARED_MODULE, f"tests/{DECLARED_MODULE}") and test.startswith("test_"):
            return _row_item(test, param, servers)
    if nodeid.startswith(ID_PREFIX):
        return nodeid
    for old in _OLD_PREFIXES:
        if path.startswith(old) and path.endswith(".py") and (CHECKS / path[len(old):]).is_file():
            return f"{ID_PREFIX}{path[len(old):]}{sep}{rest}"
    return nodeid


def path_arg(nodeid: str) -> str:
    """A check's id (or a row's: `PLAT-DRIVER`, every place of it) as a test path pytest resolves
    from any directory: `<rackgate/checks/declared.py>::PLAT-DRIVER::node1`, or the module's
    absolute path."""
    nodeid = check_id(nodeid)
    if is_row_id(nodeid):
        return f"{DECLARED}::{nodeid}"
    return str(CHECKS / nodeid[len(ID_PREFIX):]) if nodeid.startswith(ID_PREFIX) else nodeid


# An old declared item's id written in a file (a matrix case, a self-test): the path, the test, a
# parameter (possibly a {placeholder} of an f-string); and the declared checks' old module alone.
_OLD_IN_TEXT = re.compile(r"(?:rackgate/checks/)?(?:tests/)?" + re.escape(DECLARED_MODULE) + r"::test_\w+(?:\[[^\]\"'\s]*\])?")
_OLD_MODULE_IN_TEXT = re.compile(r"rackgate/checks/" + re.escape(DECLARED_MODULE) + r"\b")


def migrate_text(text: str, servers: Container[str] = ()) -> str:
    """Every old declared item's id in `text` as its row and place (check_id), the old module's path
    as the collector's file: `rackgate/checks/test_declared.py::test_plat_shm[node2]` ->
    `PLAT-SHM::node2`, `...::test_srv_boot` -> `SRV-BOOT::server` (SRV-BOOT in `servers`)."""
    text = _OLD_IN_TEXT.sub(lambda m: check_id(m.group(0) if "/" in m.group(0) else ID_PREFIX + m.group(0), servers), text)
    return _OLD_MODULE_IN_TEXT.sub("rackgate/checks/" + DECLARED.name, text)
