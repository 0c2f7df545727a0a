"""The verdict rule, applied once (rackgate/fixtures/outcome.py): the class of every phase's report,
which the terminal, JUnit, the rack map, the verdict file and `needs` all read."""
import pytest
from _pytest.outcomes import Failed

from rackgate.errors import NotRun, ToolMissing, UnrecognisedOutput
from rackgate.fixtures import outcome
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
