"""JUnit's <error> for the verdict rule's ERROR (rackgate/report/junit.py mark_errors, called by
hooks/outcome.py's JunitErrors once pytest wrote the file): a could-not-observe of the call phase
is an <error> with its own words, never a <failure>, and no report is altered on its way there."""
from pathlib import Path

import pytest
from _pytest.junitxml import mangle_test_address

from rackgate.hooks import outcome
from rackgate.report import junit

pytestmark = pytest.mark.unit

IDS = ["PLAT-SHM::node2",
       "FAB-ACCEL-ID::node1-card0",
       "selftest/x/test_mine.py::TestA::test_b"]

# What pytest 9's junitxml writes for three failed calls (one passes the verdict rule's ERROR test).
XML = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1"
failures="2" skipped="0" tests="4"><testcase classname="PLAT-SHM" name="node2"
time="0.1"><failure message="could not observe (ToolMissing): node2: ipcs not found">could not observe
(ToolMissing): node2: ipcs not found</failure></testcase><testcase classname="PLAT-SHM"
name="node3" time="0.1"><failure message="PLAT-SHM node3: 3 stale">PLAT-SHM</failure></testcase>
<testcase classname="PLAT-SHM" name="node4" time="0.1"><error
message="failed on setup with &quot;x&quot;">x</error></testcase><testcase classname="PLAT-SHM"
name="node1" time="0.1" /></testsuite></testsuites>"""


@pytest.mark.parametrize("nodeid", IDS)
def test_the_junit_name_is_pytests(nodeid: str) -> None:
    names = mangle_test_address(nodeid)
    assert junit.junit_name(nodeid) == (".".join(names[:-1]), names[-1])


def test_only_the_named_failure_becomes_an_error_with_its_words(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(XML)
    assert junit.mark_errors(path, ["PLAT-SHM::node2"]) == 1
    got = junit.read(path)
    shm = "PLAT-SHM"
    assert got[f"{shm}::node2"].status == "error"
    assert got[f"{shm}::node2"].message.startswith("could not observe (ToolMissing): node2: ipcs not found")
    assert got[f"{shm}::node3"].status == "failed"      # a finding stays a failure
    assert got[f"{shm}::node4"].status == "error" and got[f"{shm}::node1"].status == "passed"
    text = path.read_text()
    assert 'errors="2"' in text and 'failures="1"' in text


def test_nothing_named_leaves_the_file_as_pytest_wrote_it(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(XML)
    assert junit.mark_errors(path, []) == 0 and junit.mark_errors(path, ["a.py::test_other"]) == 0
    assert path.read_text() == XML


def test_no_hook_rewrites_a_reports_phase() -> None:
    """The verdict rule's hooks leave `report.when` as pytest set it (JUnit learns ERROR from the file)."""
    assert "report.when = " not in Path(outcome.__file__).read_text()
