"""The verdict rule, applied once (rackgate/hooks/outcome.py): the class of every phase's report,
which the terminal, JUnit, the rack map, the verdict file and `needs` all read."""
import pytest
from _pytest.outcomes import Failed

from rackgate.errors import NotRun, ToolMissing, UnrecognisedOutput
from rackgate.hooks import outcome
from rackgate.report.verdict import CheckFailed

pytestmark = pytest.mark.unit

FINDING = CheckFailed("PLAT-SHM", "node2", "3 stale segments")


@pytest.mark.parametrize(("when", "exc", "catalogue", "want"), [
    ("call", FINDING, True, outcome.FAILED),
    ("call", ToolMissing("node2", "amd-smi"), True, outcome.UNOBSERVED),
    ("setup", NotRun("SRV-BOOT", "failed"), True, outcome.UNOBSERVED),
    ("call", UnrecognisedOutput("?"), False, outcome.UNOBSERVED),
    ("call", ZeroDivisionError("bug"), True, outcome.INTERNAL),       # our bug, never FAILED
    ("setup", KeyError("fixture bug"), True, outcome.INTERNAL),
    ("call", Failed("stopped"), True, outcome.UNOBSERVED),            # no finding: no FAILED
    ("setup", FINDING, True, outcome.UNOBSERVED),                     # a finding outside the call
    ("call", AssertionError("x"), False, outcome.FAILED),             # a user's own test: pytest's verdict
    ("setup", RuntimeError("x"), False, outcome.UNOBSERVED),
])
def test_a_failure_is_classified_by_the_verdict_rule(when, exc, catalogue, want):
    assert outcome.classify(when, True, False, exc, catalogue) == want


@pytest.mark.parametrize(("when", "passed", "want"), [
    ("call", True, outcome.PASSED), ("setup", True, None), ("teardown", True, None), ("call", False, None)])
def test_only_a_passed_call_is_passed_and_a_skip_has_no_class(when, passed, want):
    assert outcome.classify(when, False, passed, None, True) == want


def test_the_worst_class_of_an_item_wins():
    assert outcome.worse(outcome.FAILED, outcome.UNOBSERVED)
    assert outcome.worse(outcome.UNOBSERVED, outcome.PASSED)
    assert not outcome.worse(outcome.PASSED, outcome.FAILED)
    assert not outcome.worse(outcome.INTERNAL, outcome.UNOBSERVED)
    assert outcome.worse(outcome.PASSED, None)


def test_every_hook_reads_the_class_never_its_own_table():
    """The modules that used to rank outcomes themselves (labels, server, verdict_file, rackmap)
    read `outcome.of`: none of them names a phase's exception type to decide a verdict."""
    from pathlib import Path
    fixtures = Path(outcome.__file__).parent
    for name in ("labels.py", "server.py", "verdict_file.py", "rackmap.py", "order.py"):
        text = (fixtures / name).read_text()
        assert "\"passed\": 0" not in text and "RANK = {" not in text, name
        assert "report.when = " not in text, name


def _deep(depth: int, exc: BaseException):
    if depth:
        _deep(depth - 1, exc)
    raise exc


class _Item:
    """A catalogue item as the hook reads it (its row marker)."""
    def get_closest_marker(self, name):
        return pytest.mark.row("PLAT-SHM").mark if name == "row" else None


class _Report:
    failed, passed = True, False

    def __init__(self):
        self.user_properties: list = []
        self.longrepr = "pytest's own wording"


@pytest.mark.parametrize(("when", "exc", "said"), [
    ("call", FINDING, str(FINDING)),
    ("setup", ToolMissing("node2", "amd-smi"), "could not observe (ToolMissing): "),
    ("call", NotRun("SRV-BOOT", "failed"), "could not observe (NotRun): "),
], ids=["finding", "tool-missing-in-setup", "not-run"])
def test_pytest_words_a_finding_or_a_could_not_observe_without_its_traceback(when, exc, said):
    """pytest's long traceback (the source of every frame read and parsed) would be thrown away for
    the one-line message: pytest builds its report from a placeholder that fails the same phase with
    no traceback to word, and every outer wrapper (allure, xfail, order, verdict_file) reads the real
    exception again once this one returns."""
    from _pytest.runner import CallInfo
    call = CallInfo.from_call(lambda: _deep(30, exc), when)
    real = call.excinfo
    hook = outcome.pytest_runtest_makereport(_Item(), call)
    next(hook)                                                 # pytest's own makereport runs now
    seen = call.excinfo
    assert seen is not real and isinstance(seen.value, Failed) and not seen.value.pytrace
    assert str(seen.value) == str(exc)                         # what an xfail's report keeps
    with pytest.raises(StopIteration) as done:
        hook.send(_Report())
    report = done.value.value
    assert call.excinfo is real                                # the outer wrappers' view
    assert report.longrepr.startswith(said) and str(exc) in report.longrepr
    verdict = outcome.classify(when, True, False, exc, True)
    assert verdict is not None and report.user_properties == [(outcome.KEY, verdict.value)]   # a plain string
    assert outcome.of(report) is verdict


def test_an_internal_error_keeps_pytest_building_its_traceback():
    from _pytest.runner import CallInfo
    call = CallInfo.from_call(lambda: _deep(3, ZeroDivisionError("bug")), "call")
    real = call.excinfo
    hook = outcome.pytest_runtest_makereport(_Item(), call)
    next(hook)
    assert call.excinfo is real
    with pytest.raises(StopIteration) as done:
        hook.send(_Report())
    assert done.value.value.longrepr.startswith(outcome.INTERNAL_ERROR_TITLE)
    assert "ZeroDivisionError" in done.value.value.longrepr and "_deep" in done.value.value.longrepr
