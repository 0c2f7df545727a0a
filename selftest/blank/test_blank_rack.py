"""A blank rack (selftest/blank/blankrack.py): nothing prints, every file is empty, the server
answers `{}`. No check may PASS: a PASS needs positive evidence of health. The count of checks by
verdict is printed."""
from __future__ import annotations

from collections import Counter

from ..harness import run_suite
from .blankrack import EmptyServer, rack_text


def test_no_check_passes_on_a_blank_rack(tmp_path):
    rack = tmp_path / "blank.toml"
    rack.write_text(rack_text(tmp_path / "nodes"))
    with EmptyServer() as server:
        run = run_suite(tmp_path, "--rack", str(rack), "-m", "not slow and not regression", "-p", "no:randomly",
                        "--atom-url", server.url, "--served-model", "blank-model", timeout=900)
    counts = Counter(o.status for o in run.outcomes.values())
    print(f"\nblank rack: {dict(sorted(counts.items()))} ({len(run.outcomes)} checks)")
    assert run.outcomes, run.stdout[-2000:] + run.stderr[-2000:]
    passed = sorted(run.ids("passed"))
    assert passed == [], "passed on nothing:\n" + "\n".join(passed)
    assert run.rc != 0
