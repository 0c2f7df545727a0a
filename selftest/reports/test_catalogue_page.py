"""docs/catalogue.md is generated from the catalogue, the checks and the fault matrix: the
committed page must match the data (all but the status column, which is the last run's)."""
from rackgate.report import catalogue_page as page
from rackgate.report.inventory import collect, matrix_cases
from rackgate.report.junit import Verdict
import pytest

pytestmark = pytest.mark.suite


def test_committed_page_is_up_to_date():
    fresh = page.render(collect(), matrix_cases(), None)
    committed = page.PAGE.read_text() if page.PAGE.exists() else ""
    assert page.strip_status(committed) == page.strip_status(fresh), (
        "docs/catalogue.md is out of date with the catalogue, the checks or the fault matrix: "
        "run `python -m rackgate.report.catalogue_page`")


def test_status_column_sums_up_a_check():
    v = {"t.py::f[a]": Verdict("passed", ""), "t.py::f[b]": Verdict("failed", "x"), "t.py::g": Verdict("skipped", "")}
    assert page.status_of(["t.py::f[a]", "t.py::f[b]"], v) == "FAILED 1/2"
    assert page.status_of(["t.py::f[a]"], v) == "passed 1/1"
    assert page.status_of(["t.py::g"], v) == "skipped"
    assert page.status_of(["t.py::h"], v) == "not run"
    items = [{"nodeid": "rackgate/checks/a.py::t[x]", "function": "rackgate/checks/a.py::t", "row": "PLAT-DRIVER", "markers": []}]
    text = page.render(items, [{"fault": "driver-not-loaded", "row": "PLAT-DRIVER", "select": "platform"}],
                       {"rackgate/checks/a.py::t[x]": Verdict("failed", "")}, "`junit.xml`")
    line = next(l for l in text.splitlines() if l.startswith("| [PLAT-DRIVER]"))
    assert "`rackgate/checks/a.py::t`" in line and "`driver-not-loaded`" in line and line.endswith("| FAILED 1/1 |")
    assert page.strip_status(text) == page.strip_status(page.render(items, [{"fault": "driver-not-loaded",
                                                                              "row": "PLAT-DRIVER", "select": "platform"}], None))
