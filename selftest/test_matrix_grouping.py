"""Which fault-matrix cases share a suite run (selftest/matrix.py plan()), how a shared run is
judged (judge_group()), and the solo re-run on any difference (Runs.verdict()), with synthetic
cases and SuiteRun objects (no suite runs)."""
from types import SimpleNamespace

import pytest

from rackgate.report.junit import Verdict as Outcome

from . import matrix as mx
from .harness import SuiteRun

pytestmark = pytest.mark.unit


def _row(rid, needs=(), area="platform", reads=()):
    return SimpleNamespace(id=rid, meaning=f"{rid} means", action=f"{rid} action", needs=tuple(needs), area=area,
                           reads=tuple(reads))


ROWS = ({r: _row(r) for r in ("PLAT-A", "PLAT-B", "PLAT-C")} | {"SRV-X": _row("SRV-X", ["PLAT-A"])}
        | {"SRV-Y": _row("SRV-Y", area="serving")} | {"PLAT-R": _row("PLAT-R", reads=["PLAT-A"])})


def _case(name, row, paths, fail=(), select="platform", **kw):
    return {"fault": name, "row": row, "select": select, "paths": list(paths), "fail": list(fail), **kw}


A = _case("fa", "PLAT-A", ["rackgate/checks/platform/test_a.py"], ["rackgate/checks/platform/test_a.py::test_a[node1]"])
B = _case("fb", "PLAT-B", ["rackgate/checks/platform/test_b.py"], ["rackgate/checks/platform/test_b.py::test_b[node2]"])
TOUCH = {"fa": frozenset({("nodes", "node1", "modules")}), "fb": frozenset({("nodes", "node2", "plat")})}


def _msg(rid):
    return f"{rid} [node]: evidence\n{rid} means\n{rid} action"


def _run(outcomes: dict, rc=None):
    oc = {t: Outcome(s, m) for t, (s, m) in outcomes.items()}
    if rc is None:
        rc = int(any(o.status in ("failed", "error") for o in oc.values()))
    return SuiteRun(rc, "", "", oc)


HEALTHY_AB = {"rackgate/checks/platform/test_a.py::test_a[node1]": ("failed", _msg("PLAT-A")),
              "rackgate/checks/platform/test_a.py::test_a[node2]": ("passed", ""),
              "rackgate/checks/platform/test_b.py::test_b[node2]": ("failed", _msg("PLAT-B")),
              "rackgate/checks/platform/test_b.py::test_b[node1]": ("passed", "")}


# --- plan ----------------------------------------------------------------------------------

def test_compatible_cases_share_one_run():
    assert mx.plan([A, B], TOUCH, ROWS) == [[A, B]]
    assert mx.group_args([A, B]) == ["rackgate/checks/platform/test_a.py", "rackgate/checks/platform/test_b.py", "-m", "platform",
                                     "--sim-fault", "fa", "--sim-fault", "fb"]


@pytest.mark.parametrize("other, why", [
    ({**B, "row": "PLAT-A"}, "same row"),
    ({**B, "paths": ["rackgate/checks/platform/test_a.py"]}, "shared test files"),
    ({**B, "paths": ["rackgate/checks/platform"]}, "shared test files"),          # a folder holding A's file
    ({**B, "fault": "fc"}, "the faults touch the same sim state"),
    ({**B, "row": "SRV-X"}, "one row needs the other"),
    ({**B, "row": "PLAT-R"}, "one row needs the other"),      # reads A's result: A's fault changes it
    ({**B, "row": "SRV-Y"}, "different areas"),
])
def test_cases_that_could_interact_never_share(other, why):
    touch = {**TOUCH, "fc": frozenset({("nodes", "node1")})}    # a parent of A's path
    assert mx.compatible(A, other, touch, ROWS) == why
    assert mx.plan([A, other], touch, ROWS) == [[A], [other]]


def test_a_case_holding_the_survey_never_shares_with_a_platform_case():
    """The survey's tray cells judge every platform row of every node (JUDGES_AREA), though they
    carry no row: params-default failed port-held's test_tray[node2-params] in a shared run (wave 11)."""
    survey = _case("fsv", "PLAT-C", ["rackgate/checks/survey", "rackgate/checks/platform/test_c.py"], select="survey or platform")
    assert mx.compatible(A, survey, TOUCH, ROWS) == "rackgate/checks/survey judges every platform row (fa's PLAT-A too)"
    assert mx.compatible(survey, A, TOUCH, ROWS).startswith("rackgate/checks/survey judges")
    assert mx.plan([A, survey, B], TOUCH, ROWS) == [[A, B], [survey]]
    assert mx.compatible({**survey, "paths": ["rackgate/checks/platform/test_c.py"]}, A, {**TOUCH, "fsv": frozenset()}, ROWS) == ""


ITEMS = [{"nodeid": "rackgate/checks/platform/test_a.py::test_a[node1]", "row": "PLAT-A", "markers": ["platform"]},
         {"nodeid": "rackgate/checks/platform/test_b.py::test_b[node2]", "row": "PLAT-B", "markers": ["platform"]},
         {"nodeid": "rackgate/checks/serving/test_s.py::test_s", "row": "SRV-X", "markers": ["gate", "serving"]},
         {"nodeid": "rackgate/checks/serving/test_s.py::test_t", "row": "PLAT-C", "markers": ["serving"]}]
S = _case("fs", "PLAT-C", ["rackgate/checks/serving/test_s.py"], ["rackgate/checks/serving/test_s.py::test_t"], select="serving and not gate")


def test_different_selections_share_only_where_the_markers_say_each_part_is_unchanged():
    fab = {**B, "select": "fabric or platform"}
    assert mx.plan([A, fab], TOUCH, ROWS) == [[A], [fab]]                 # no markers known: never
    assert mx.plan([A, fab], TOUCH, ROWS, items=ITEMS) == [[A, fab]]      # the markers say it is the same
    assert mx.group_args([A, fab])[2:4] == ["-m", "(platform) or (fabric or platform)"]
    gate = {**S, "select": "gate"}       # or-ed with 'serving and not gate', it would add test_s
    touch = {**TOUCH, "fs": frozenset({("server", "faults")})}
    assert "selects other tests" in mx.selection_problem([S, gate], ITEMS)
    assert mx.plan([S, {**gate, "row": "PLAT-B", "paths": ["rackgate/checks/serving/test_x.py"]}], touch, ROWS, items=ITEMS)[0] == [S]
    assert "selects other tests" in mx.selection_problem([A, {**B, "select": "survey"}], ITEMS)  # nothing collected


def test_a_case_never_shares_with_one_whose_failure_its_tests_need():
    """S's paths hold test_s, whose row SRV-X needs PLAT-A: with A failing PLAT-A, test_s would be
    'not run' in a shared run, never in S's own."""
    touch = {**TOUCH, "fs": frozenset({("server", "faults")})}
    s_platform = {**S, "select": "platform or serving"}
    assert "needs a row fa fails" in mx.needs_problem(A, s_platform, ROWS, ITEMS)
    assert mx.needs_problem(s_platform, A, ROWS, ITEMS) == ""
    assert mx.plan([A, s_platform], touch, ROWS, items=ITEMS) == [[A], [s_platform]]


def test_a_case_never_shares_with_one_that_runs_the_rows_its_own_checks_need():
    """A's fault may reach the rows A's checks stand on, which its solo run does not run: where B's
    part runs one, a failure there would be B's and A's checks "not run" (SRV-X needs PLAT-A)."""
    a = _case("fx", "SRV-X", ["rackgate/checks/serving/test_s.py::test_s"], ["rackgate/checks/serving/test_s.py::test_s"])
    b = _case("fy", "PLAT-B", ["rackgate/checks/platform/test_a.py"], [])
    assert "test_a[node1] (PLAT-A) is a row fx's checks need" in mx.needs_problem(a, b, ROWS, ITEMS)
    assert mx.needs_problem(a, {**b, "paths": ["rackgate/checks/platform/test_b.py"]}, ROWS, ITEMS) == ""


def test_the_packing_shares_what_first_fit_in_the_cases_order_leaves_alone():
    """A takes B first (the cases' order); C may share with A only, D with B only: first fit
    made three runs ([A, B], [C], [D]); the most constrained first packs two ([A, C], [B, D])."""
    c = _case("fc", "PLAT-C", ["rackgate/checks/platform/test_c.py"])
    d = _case("fd", "PLAT-R", ["rackgate/checks/platform/test_d.py"])
    touch = {"fa": frozenset({("x",)}), "fb": frozenset({("y",)}), "fc": frozenset({("y",), ("z",)}),
             "fd": frozenset({("x",), ("z",)})}
    assert mx.plan([A, B, c, d], touch, ROWS) == [[A, c], [B, d]]


def test_a_case_that_stops_the_server_never_shares_with_checks_on_it():
    """A fault failing SRV-BOOT (or SRV-MODELS, SRV-ALIVE) makes every check on the server "not
    run", whether or not its row names it in `needs`."""
    rows_ = {**ROWS, "SRV-BOOT": _row("SRV-BOOT", area="serving")}
    boot = _case("fboot", "SRV-BOOT", ["SRV-BOOT::server"], ["SRV-BOOT::server"])
    items = [*ITEMS, {"nodeid": "SRV-BOOT::server", "row": "SRV-BOOT", "markers": ["serving"]}]
    assert "runs on the server, which fboot stops" in mx.needs_problem(boot, S, rows_, items)
    assert mx.needs_problem(boot, A, rows_, items) == ""        # a platform check does not use it
    also = {**boot, "row": "PLAT-B", "fail": [], "also_fail": ["SRV-BOOT::server"]}
    assert "stops" in mx.needs_problem(also, S, rows_, items)   # a consequence counts too


@pytest.mark.parametrize("extra", [{"baseline": ["-m", "x"]}, {"output": ["text"]}, {"paths": []},
                                   {"solo": "the fault restarts every node"}])
def test_some_cases_always_run_alone(extra):
    lone = {**B, **extra}
    assert mx.alone_because(lone)
    assert mx.plan([A, lone], TOUCH, ROWS) == [[A], [lone]]
    assert mx.plan([lone, A], TOUCH, ROWS) == [[lone], [A]]


def test_solo_mode_gives_every_case_its_own_run():
    assert mx.plan([A, B], TOUCH, ROWS, solo=True) == [[A], [B]]


def test_fault_touches_reads_the_sim_state():
    t = mx.fault_touches(["driver-not-loaded", "driver-not-loaded@node1", "ifoe-not-loaded"])
    assert t["driver-not-loaded"] == {("nodes", "node3", "kfd"), ("nodes", "node3", "modules")}
    assert t["driver-not-loaded@node1"] == {("nodes", "node1", "kfd"), ("nodes", "node1", "modules")}
    assert t["ifoe-not-loaded"] == {("nodes", "node1", "modules")}


# --- judge_group ---------------------------------------------------------------------------

def test_a_clean_shared_run_passes_every_case():
    by_case, whole = mx.judge_group([A, B], _run(HEALTHY_AB), ROWS)
    assert by_case == {"fa": [], "fb": []} and whole == []
    own = mx.own_part(_run(HEALTHY_AB), B)
    assert set(own.outcomes) == {"rackgate/checks/platform/test_b.py::test_b[node2]", "rackgate/checks/platform/test_b.py::test_b[node1]"}
    assert own.rc == 1


def test_an_expected_failure_that_passed_is_a_mismatch():
    out = {**HEALTHY_AB, "rackgate/checks/platform/test_b.py::test_b[node2]": ("passed", "")}
    by_case, whole = mx.judge_group([A, B], _run(out), ROWS)
    assert by_case["fa"] == [] and any("expected to fail" in p for p in by_case["fb"])
    assert mx.own_part(_run(out), B).rc == 0


def test_a_failure_carrying_another_cases_row_is_a_mismatch():
    """Masking: A's fault fails the test B expects to fail. Even when B's own diagnosis is there
    too, a message that is A's verdict in B's tests means the faults interacted."""
    out = {**HEALTHY_AB, "rackgate/checks/platform/test_b.py::test_b[node2]": ("failed", _msg("PLAT-A") + "\n" + _msg("PLAT-B"))}
    by_case, _ = mx.judge_group([A, B], _run(out), ROWS)
    assert any("carries PLAT-A, the row of fa" in p for p in by_case["fb"])


def test_not_run_because_of_another_case_is_a_mismatch():
    out = {**HEALTHY_AB, "rackgate/checks/platform/test_b.py::test_b[node1]":
           ("error", "could not observe (NotRun): not run: PLAT-A failed (see it)")}
    by_case, _ = mx.judge_group([A, B], _run(out), ROWS)
    assert any("not run because PLAT-A (fa) failed" in p for p in by_case["fb"])


def test_a_failure_outside_every_case_or_a_broken_run_is_a_mismatch():
    out = {**HEALTHY_AB, "rackgate/checks/platform/test_c.py::test_c": ("failed", _msg("PLAT-C"))}
    assert mx.judge_group([A, B], _run(out), ROWS)[1]
    assert mx.judge_group([A, B], _run(HEALTHY_AB, rc=2), ROWS)[1]
    by_case, whole = mx.judge_group([A, B], _run({}, rc=4), ROWS)
    assert whole and not any(by_case.values())


# --- Runs: the solo re-run on mismatch -------------------------------------------------------

class FakeRunner:
    """Stands in for run_case: the shared run's outcomes are given; a solo run is the shared
    outcomes restricted to the case (what it would have been had the cases not interacted)."""

    def __init__(self, shared: dict):
        self.shared, self.calls = shared, []

    def __call__(self, case, workdir):
        self.calls.append(mx.case_id(case) if case else mx.HEALTHY)
        return mx.own_part(_run(HEALTHY_AB), case)

    def group(self, group, workdir):
        self.calls.append(mx.group_name(group))
        return _run(self.shared)


def _runs(shared):
    fake = FakeRunner(shared)
    r = mx.Runs([A, B], jobs=1, rows=ROWS, touches=TOUCH, items=ITEMS, runner=fake, group_runner=fake.group)
    return r, fake


def test_a_clean_shared_run_is_the_verdict_and_nothing_is_rerun():
    r, fake = _runs(HEALTHY_AB)
    try:
        va, vb = r.verdict("fa"), r.verdict("fb")
    finally:
        r.close()
    assert fake.calls == ["fa+fb"] and r.reruns == []
    assert va.problems == [] and vb.problems == [] and "shared with fb" in va.how


def test_any_mismatch_reruns_every_case_alone_and_the_solo_run_decides():
    out = {**HEALTHY_AB, "rackgate/checks/platform/test_b.py::test_b[node1]": ("failed", _msg("PLAT-A"))}
    r, fake = _runs(out)
    try:
        va, vb = r.verdict("fa"), r.verdict("fb")
    finally:
        r.close()
    assert fake.calls[0] == "fa+fb" and sorted(fake.calls[1:]) == ["fa", "fb"]
    assert va.problems == [] and vb.problems == []          # the solo runs are clean
    assert "re-run alone" in va.how and "re-run alone" in vb.how
    assert len(r.reruns) == 1 and "fa+fb" in r.reruns[0]


def test_a_real_fault_still_fails_after_the_rerun():
    class Broken(FakeRunner):
        def __call__(self, case, workdir):
            run = super().__call__(case, workdir)
            if case is B:  # B's check is broken: it never fails
                run.outcomes = {t: Outcome("passed", "") for t in run.outcomes}
                run.rc = 0
            return run
    out = {**HEALTHY_AB, "rackgate/checks/platform/test_b.py::test_b[node2]": ("failed", _msg("PLAT-A") + _msg("PLAT-B"))}
    fake = Broken(out)
    r = mx.Runs([A, B], jobs=1, rows=ROWS, touches=TOUCH, items=ITEMS, runner=fake, group_runner=fake.group)
    try:
        vb = r.verdict("fb")
    finally:
        r.close()
    assert any("expected to fail, but it passed" in p for p in vb.problems)


C = _case("fc", "PLAT-C", ["rackgate/checks/platform/test_c.py"], ["rackgate/checks/platform/test_c.py::test_c[node3]"])
D = _case("fd", "PLAT-R", ["rackgate/checks/platform/test_d.py"], ["rackgate/checks/platform/test_d.py::test_d[node4]"])
HEALTHY_ABC = {**HEALTHY_AB,
               "rackgate/checks/platform/test_c.py::test_c[node3]": ("failed", _msg("PLAT-C")),
               "rackgate/checks/platform/test_c.py::test_c[node1]": ("passed", "")}
HEALTHY_ABCD = {**HEALTHY_ABC,
                "rackgate/checks/platform/test_d.py::test_d[node4]": ("failed", _msg("PLAT-R")),
                "rackgate/checks/platform/test_d.py::test_d[node1]": ("passed", "")}


class GroupRunner(FakeRunner):
    """A shared run's outcomes by the group's name (where none is given, the healthy outcomes of
    the group's paths); a solo run is the healthy outcomes restricted to the case."""

    def __init__(self, by_group: dict):
        super().__init__({})
        self.by_group = by_group

    def __call__(self, case, workdir):
        self.calls.append(mx.case_id(case))
        return mx.own_part(_run(HEALTHY_ABCD), case)

    def group(self, group, workdir):
        self.calls.append(mx.group_name(group))
        healthy = {t: o for t, o in HEALTHY_ABCD.items() if any(mx._in_paths(t, c["paths"]) for c in group)}
        return _run(self.by_group.get(mx.group_name(group), healthy))


def _verdicts(by_group: dict, cases=(A, B, C)):
    fake = GroupRunner(by_group)
    touch = {c["fault"]: frozenset({("nodes", f"node{i}", "x")}) for i, c in enumerate(cases)}
    r = mx.Runs(list(cases), jobs=1, rows=ROWS, touches=touch, items=ITEMS, runner=fake, group_runner=fake.group)
    try:
        assert [mx.group_name(g) for g in r.groups] == [mx.group_name(list(cases))]
        return {mx.case_id(c): r.verdict(mx.case_id(c)) for c in cases}, fake.calls, r.reruns
    finally:
        r.close()


def test_a_difference_reruns_alone_only_the_cases_it_implicates_and_the_others_share_again():
    """B's expected failure passed in the run of three: B is re-run alone (its solo run decides),
    A and C share a second run, judged as strictly, which is their verdict."""
    v, calls, reruns = _verdicts({"fa+fb+fc": {**HEALTHY_ABC, "rackgate/checks/platform/test_b.py::test_b[node2]": ("passed", "")}})
    assert calls[0] == "fa+fb+fc" and sorted(calls[1:]) == ["fa+fc", "fb"]
    assert all(x.problems == [] for x in v.values())
    assert v["fb"].how.startswith("re-run alone") and "shared again" in v["fa"].how and "shared again" in v["fc"].how
    assert "one run shared with fc" in v["fa"].how
    assert len(reruns) == 1 and "re-run alone: fb; shared again: fa+fc" in reruns[0]


def test_a_second_shared_run_that_differs_reruns_each_of_its_cases_alone():
    v, calls, reruns = _verdicts({
        "fa+fb+fc": {**HEALTHY_ABC, "rackgate/checks/platform/test_b.py::test_b[node2]": ("passed", "")},
        "fa+fc": {**HEALTHY_ABC, "rackgate/checks/platform/test_c.py::test_c[node3]": ("passed", "")}})
    assert calls[0] == "fa+fb+fc" and sorted(calls[1:]) == ["fa", "fa+fc", "fb", "fc"]
    assert all(x.problems == [] for x in v.values()) and all("re-run alone" in x.how for x in v.values())
    assert len(reruns) == 2 and reruns[1].startswith("fa+fc: ") and "shared again" not in reruns[1]


def test_a_split_puts_the_fault_that_reached_across_alone_too():
    """C's part carries A's row: A's fault reached C's tests, so A is re-run alone with C, and B
    and D share again; a failure outside every part (or a broken run) re-runs every case alone."""
    group = [A, B, C, D]
    run = _run({**HEALTHY_ABCD, "rackgate/checks/platform/test_c.py::test_c[node1]": ("failed", _msg("PLAT-A"))})
    by_case, whole = mx.judge_group(group, run, ROWS)
    alone, again = mx.split(group, run, by_case, whole)
    assert [mx.case_id(c) for c in alone] == ["fa", "fc"] and [mx.case_id(c) for c in again] == ["fb", "fd"]
    assert mx.split(group, run, by_case, whole, again_allowed=False) == (group, [])
    outside = _run({**HEALTHY_ABCD, "rackgate/checks/platform/test_e.py::test_e": ("failed", _msg("PLAT-B"))})
    assert mx.split(group, outside, *mx.judge_group(group, outside, ROWS)) == (group, [])
    one_left = _run({**HEALTHY_ABCD, "rackgate/checks/platform/test_c.py::test_c[node1]": ("failed", _msg("PLAT-A")),
                     "rackgate/checks/platform/test_b.py::test_b[node2]": ("passed", "")})
    assert mx.split(group, one_left, *mx.judge_group(group, one_left, ROWS)) == (group, [])


def test_the_pool_starts_the_costliest_runs_first():
    """The healthy run, then runs that boot a server (a recorded baseline counts twice), then the
    cheap platform runs, whatever order the tests asked in: the cheap ones fill the pool's end."""
    srv = {**_case("fs", "SRV-Y", ["rackgate/checks/serving/test_s.py"], []), "select": "serving"}
    reg = {**_case("fr", "SRV-X", ["rackgate/checks/serving/test_s.py"], []), "select": "serving", "baseline": ["-m", "x"]}
    plat = {**A, "select": "platform"}
    fake = FakeRunner(HEALTHY_AB)
    r = mx.Runs([plat, srv, reg], jobs=1, solo=True, rows=ROWS, touches={}, runner=fake)
    try:
        r.start(["fa", "fs", mx.HEALTHY, "fr"])
        for name in ("fa", "fs", "fr"):
            r.get(name)
    finally:
        r.close()
    assert fake.calls == [mx.HEALTHY, "fr", "fs", "fa"]


def test_a_shared_run_that_differed_queues_its_solo_runs_before_any_test_asks():
    """The re-runs start when the shared run ends, not when the group's test comes up (a matrix
    test late in the order would otherwise leave its re-runs for the session's last minutes)."""
    out = {**HEALTHY_AB, "rackgate/checks/platform/test_b.py::test_b[node1]": ("failed", _msg("PLAT-A"))}
    fake = FakeRunner(out)
    r = mx.Runs([A, B], jobs=1, rows=ROWS, touches=TOUCH, items=ITEMS, runner=fake, group_runner=fake.group)
    try:
        r.start(["fa", "fb"])
        r._pool.shutdown(wait=True)  # the shared run ended; no test asked for a verdict
        r._rerun_pool.shutdown(wait=True)  # what ran here was queued by the run's end
    finally:
        r.close()
    assert fake.calls[0] == "fa+fb" and sorted(fake.calls[1:]) == ["fa", "fb"]


def test_cases_of_one_file_s_functions_share_runs():
    """The declared checks' cases narrow rackgate/checks/declared.py to their own function: two rows'
    cases do not share tests (so they may share a run), a whole-file path shares with both."""
    shm, tuned = "PLAT-SHM", "PLAT-TUNED"
    assert not mx._overlap(shm, tuned)
    assert mx._overlap("rackgate/checks/declared.py", shm) and mx._overlap(shm, shm)
    assert mx._in_paths(f"{shm}::node2", [shm]) and not mx._in_paths(f"{tuned}::node2", [shm])
    assert mx._in_paths(f"{tuned}::node2", ["rackgate/checks/declared.py"])
    a = _case("fa", "PLAT-A", [shm], [f"{shm}::node1"])
    b = _case("fb", "PLAT-B", [tuned], [f"{tuned}::node2"])
    assert not mx.compatible(a, b, TOUCH, ROWS)
    assert mx.compatible(a, {**b, "paths": ["rackgate/checks/declared.py"]}, TOUCH, ROWS) == "shared test files"


def test_every_solo_fault_names_a_matrix_case():
    """The runner's ALONE table (selftest/matrix.py) names faults the matrix has, and each runs alone."""
    from rackgate.faultmatrix import cases
    by_fault = {c["fault"]: c for c in cases()}
    assert mx.ALONE and set(mx.ALONE) <= set(by_fault), set(mx.ALONE) - set(by_fault)
    assert all(mx.alone_because(by_fault[f]).startswith("solo: ") for f in mx.ALONE)
