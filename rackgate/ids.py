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


def check_id(nodeid: str) -> str:
    """The id of one of rackgate's checks however it was recorded: `rackgate/checks/...` as it is,
    `platform/...` (pytest's own id under a moved rootdir or from a wheel) or `tests/...` (before
    the package move) as the check of the package it names; any other id unchanged."""
    if nodeid.startswith(ID_PREFIX):
        return nodeid
    path, sep, rest = nodeid.partition("::")
    for old in _OLD_PREFIXES:
        if path.startswith(old) and path.endswith(".py") and (CHECKS / path[len(old):]).is_file():
            return f"{ID_PREFIX}{path[len(old):]}{sep}{rest}"
    return nodeid


def path_arg(nodeid: str) -> str:
    """A check's id as a test path pytest resolves from any directory (the module's absolute path)."""
    nodeid = check_id(nodeid)
    return str(CHECKS / nodeid[len(ID_PREFIX):]) if nodeid.startswith(ID_PREFIX) else nodeid
