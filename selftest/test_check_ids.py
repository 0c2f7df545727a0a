"""rackgate/ids.py: an id recorded under any rootdir names the same check; an id turns back into a
test path that resolves from any directory."""
from __future__ import annotations

from pathlib import Path

import pytest

from rackgate.ids import CHECKS, check_id, path_arg

pytestmark = pytest.mark.unit

ID = "rackgate/checks/fabric/test_links.py::test_link_training[node1-card0]"


@pytest.mark.parametrize("recorded", [ID, "fabric/test_links.py::test_link_training[node1-card0]",
                                      "tests/fabric/test_links.py::test_link_training[node1-card0]"])
def test_an_id_from_any_rootdir_names_the_packages_check(recorded):
    assert check_id(recorded) == ID


@pytest.mark.parametrize("other", ["selftest/test_ids.py::test_x", "platform/test_nothing_here.py::t", "", "x"])
def test_an_id_of_no_check_of_the_package_stays(other):
    assert check_id(other) == other


def test_an_id_turns_into_an_absolute_test_path():
    arg = path_arg("fabric/test_links.py::test_link_training[node1-card0]")
    path, _, name = arg.partition("::")
    assert Path(path).is_absolute() and Path(path) == CHECKS / "fabric/test_links.py" and Path(path).is_file()
    assert name == "test_link_training[node1-card0]"
