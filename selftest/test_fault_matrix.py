"""The fault matrix (rackgate/catalogue/matrix/*.toml): every sim fault fails exactly its expected
checks, each with the catalogue's diagnosis; the healthy rack fails nothing; every catalogue row
has a check and a matrix case. The runs are made by selftest/matrix.py, concurrently; cases that
cannot interact share one run; on any difference the cases it implicates are re-run alone and
the others share a run again (see that module's docstring; RACKGATE_MATRIX_SOLO=1: one run per case)."""
import pytest

from rackgate import faultmatrix as sim_matrix
from rackgate.catalogue import rows
from rackgate.report.inventory import checks_by_row, collect
from rackgate.sim import faults as sim_faults

from . import matrix as mx
from .harness import dist_mode

pytestmark = pytest.mark.matrix

CASES = sim_matrix.cases()  # the explicit cases and those derived from declared checks


@pytest.fixture(scope="module")
def runs(request):
    """All the matrix's suite runs, started together as soon as the first test asks. Under xdist
    with --dist loadgroup the whole module is on one worker (selftest/conftest.py), which starts
    them all the same way; under another --dist each worker runs only the cases it was given.
    Only the cases this session runs are planned: a `-k` of one case (the recipe's dry runs) is
    that case's own run, not a shared run of its group with faults nobody asked about."""
    whole_module_here = dist_mode(request.config) in ("no", "loadgroup")
    mine = [it for it in request.session.items if it.module is request.module]
    wanted = [it.callspec.params["case"] for it in mine if hasattr(it, "callspec") and "case" in it.callspec.params]
    r = mx.Runs(wanted if whole_module_here else CASES)
    if whole_module_here:
        names = [mx.HEALTHY] if any(it.name == "test_healthy_rack_passes_everything" for it in mine) else []
        r.start(names + [mx.case_id(c) for c in wanted])
    yield r
    r.close()
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    if tr is not None and capman is not None and r.started:
        with capman.global_and_fixture_disabled():  # the summary is for the user, not captured
            tr.write_line(f"\nfault matrix: {len(r.started)} case runs for "
                          f"{sum(len(g) for g in r.started)} cases, {len(r.reruns)} shared run(s) differed and were re-run")
            for line in r.reruns:
                tr.write_line(f"fault matrix: {line}")


def test_matrix_data_is_valid():
    problems = mx.validate(CASES, rows(), sim_faults.all_faults())
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(mx.WAIT_TIMEOUT_S)
def test_healthy_rack_passes_everything(runs):
    run = runs.get(mx.HEALTHY)
    problems = mx.judge_healthy(run)
    assert not problems, "\n".join(problems) + "\n--- output tail ---\n" + run.stdout[-3000:]


@pytest.mark.timeout(mx.WAIT_TIMEOUT_S)  # waits on runs that are each bounded (selftest/matrix.py)
@pytest.mark.parametrize("case", CASES, ids=[mx.case_id(c) for c in CASES])
def test_fault_fails_exactly_its_checks(case, runs, record_property):
    v = runs.verdict(mx.case_id(case))
    record_property("matrix_run", v.how)  # its own run, a shared one, or re-run alone and why (JUnit)
    assert not v.problems, (f"sim fault {case['fault']} ({case['row']}, {case['source']}; {v.how}):\n  "
                            + "\n  ".join(v.problems) + "\n--- output tail ---\n" + v.run.stdout[-3000:])


def test_every_row_has_a_check_and_a_matrix_case():
    """Strict on purpose: a catalogue row without a check, or a check never proven on its fault,
    is not done. The message names every row still missing something."""
    checks = checks_by_row(collect())
    cased = {c["row"] for c in CASES}
    missing = []
    for rid in rows():
        lacks = [what for what, ok in (("a check (@pytest.mark.row)", rid in checks),
                                       ("a fault-matrix case", rid in cased)) if not ok]
        if lacks:
            missing.append(f"{rid}: missing {' and '.join(lacks)}")
    unknown = sorted(set(checks) - set(rows()))
    assert not missing and not unknown, (
        f"{len(missing)} of {len(rows())} catalogue rows are not covered yet:\n  " + "\n  ".join(missing)
        + (f"\nchecks name unknown rows: {unknown}" if unknown else ""))


def test_every_sim_fault_has_a_matrix_case():
    cased = {c["fault"].partition("@")[0] for c in CASES}
    unproven = sorted(f"{f.name} ({f.row})" for f in sim_faults.all_faults().values() if f.name not in cased)
    assert not unproven, "sim faults with no fault-matrix case (never proven): " + ", ".join(unproven)
