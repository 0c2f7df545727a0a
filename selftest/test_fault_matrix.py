"""Every sim fault fails exactly its expected checks, with the catalogue's diagnosis; the healthy
rack passes everything."""
import pytest

from rackgate.catalogue import matrix, row

from .harness import run_suite

CASES = matrix()


def test_healthy_rack_passes_everything(tmp_path):
    run = run_suite(tmp_path)
    assert run.outcomes, run.stdout + run.stderr
    assert run.not_passed == set(), run.stdout[-4000:]
    assert run.rc == 0


@pytest.mark.parametrize("case", CASES, ids=[c["fault"] for c in CASES])
def test_fault_fails_exactly_its_checks(case, tmp_path):
    run = run_suite(tmp_path, "-m", case["select"], "--sim-fault", case["fault"])
    assert run.outcomes, run.stdout + run.stderr
    expected = set(case["fail"]) | set(case.get("also_fail", []))
    assert run.not_passed == expected, run.stdout[-4000:]
    r = row(case["row"])
    for test_id in case["fail"]:
        msg = run.outcomes[test_id].message
        assert run.outcomes[test_id].status == "failed", msg
        assert r.id in msg and r.meaning in msg and r.action in msg, msg
