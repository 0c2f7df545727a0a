"""A blank rack (selftest/blank/blankrack.py): nothing prints, every file is empty, the server
answers `{}`. No check may PASS: a PASS needs positive evidence of health. One suite run (every
marker but slow/regression, attached to the `{}` server); the count of checks by verdict is printed.

The platform and fabric checks must not FAIL either: nothing was read, so there is nothing to
blame the rack for (ERROR, naming the empty file or silent tool)."""
from __future__ import annotations

from collections import Counter

import pytest

from ..harness import run_suite
from .blankrack import EmptyServer, rack_text

pytestmark = pytest.mark.suite


@pytest.fixture(scope="module")
def blank_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("blank")
    rack = tmp / "blank.toml"
    rack.write_text(rack_text(tmp / "nodes"))
    with EmptyServer() as server:
        run = run_suite(tmp, "--rack", str(rack), "-m", "not slow and not regression", "-p", "no:randomly",
                        "--atom-url", server.url, "--served-model", "blank-model", timeout=900)
    counts = Counter(o.status for o in run.outcomes.values())
    print(f"\nblank rack: {dict(sorted(counts.items()))} ({len(run.outcomes)} checks)")
    assert run.outcomes, run.stdout[-2000:] + run.stderr[-2000:]
    return run


def test_no_check_passes_on_a_blank_rack(blank_run):
    passed = sorted(blank_run.ids("passed"))
    assert passed == [], "passed on nothing:\n" + "\n".join(passed)
    assert blank_run.rc != 0


def test_platform_and_fabric_blame_nothing_on_a_blank_rack(blank_run):
    moved = tuple(f"{r}::" for r in (
        "PLAT-DRIVER", "PLAT-IFOE", "PLAT-PARAMS", "PLAT-WEDGED", "PLAT-ATOM-COMMIT", "FAB-STATE", "FAB-POD",
        "FAB-P2P", "FAB-BW", "FAB-DMESG", "FAB-LEFTOVER", "FAB-UNPOPULATED", "FAB-TRANSPORT", "FAB-COLLECTIVE",
        "FAB-ACCEL-ID", "FAB-TRAINING", "FAB-ERRORS"))
    ours = {k: o for k, o in blank_run.outcomes.items() if k.startswith(moved)}
    assert len(ours) > 40
    wrong = {k: f"{o.status}: {o.message[:200]}" for k, o in ours.items() if o.status in ("passed", "failed")}
    assert wrong == {}
    for k, o in ours.items():
        if o.status == "error":
            assert "could not observe" in o.message, (k, o.message[:300])
