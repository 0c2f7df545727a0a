"""rackgate/ids.py: an id recorded under any rootdir names the same check; an id turns back into a
test path that resolves from any directory."""
from __future__ import annotations

from pathlib import Path

import pytest

from rackgate.ids import CHECKS, check_id, path_arg

pytestmark = pytest.mark.unit

ID = "rackgate/checks/regression/test_regression.py::test_facts_within_tolerance[ualink.local_accels]"


@pytest.mark.parametrize("recorded", [ID, "regression/test_regression.py::test_facts_within_tolerance[ualink.local_accels]",
                                      "tests/regression/test_regression.py::test_facts_within_tolerance[ualink.local_accels]"])
def test_an_id_from_any_rootdir_names_the_packages_check(recorded):
    assert check_id(recorded) == ID


TRAINING = "FAB-TRAINING::node1-card0"


@pytest.mark.parametrize("recorded", ["rackgate/checks/fabric/test_links.py::test_link_training[node1-card0]",
                                      "fabric/test_links.py::test_link_training[node1-card0]",
                                      "tests/fabric/test_links.py::test_link_training[node1-card0]"])
def test_an_id_of_a_check_since_declared_names_its_declared_item(recorded):
    """A baseline recorded before FAB-TRAINING was declared still names its check (-m regression)."""
    assert check_id(recorded) == TRAINING
    assert check_id("serving/test_hw_errors.py::test_srv_hw_errors[node2]") == \
        "SRV-HW-ERRORS::node2"


@pytest.mark.parametrize("other", ["selftest/test_ids.py::test_x", "platform/test_nothing_here.py::t", "", "x"])
def test_an_id_of_no_check_of_the_package_stays(other):
    assert check_id(other) == other


@pytest.mark.parametrize("recorded", ["rackgate/checks/test_declared.py::test_plat_driver[node1]",
                                      "test_declared.py::test_plat_driver[node1]",
                                      "tests/test_declared.py::test_plat_driver[node1]", "PLAT-DRIVER::node1"])
def test_a_declared_items_old_id_names_its_row_and_place(recorded):
    """The declared checks' module until issue 56, from any rootdir, reads as the row and the place."""
    assert check_id(recorded) == "PLAT-DRIVER::node1"
    assert check_id("rackgate/checks/test_declared.py::test_srv_golden[node3-dp11]") == "SRV-GOLDEN::node3-dp11"
    # without a parameter: the row (every place), or a "server" check's one item
    assert check_id("rackgate/checks/test_declared.py::test_plat_shm") == "PLAT-SHM"
    assert check_id("rackgate/checks/test_declared.py::test_srv_boot", {"SRV-BOOT"}) == "SRV-BOOT::server"


def test_the_migration_rewrites_old_ids_in_text_and_is_rerunnable():
    from rackgate.ids import migrate_text
    from rackgate.registry import server_rows
    servers = server_rows()
    assert {"SRV-BOOT", "ACC-QUICK"} <= servers and "PLAT-SHM" not in servers
    old = ('paths = ["rackgate/checks/test_declared.py::test_srv_boot", "rackgate/checks/test_declared.py::test_plat_shm"]\n'
           'fail = ["rackgate/checks/test_declared.py::test_fab_state[node2-card3]"]\n'
           'f"rackgate/checks/test_declared.py::test_plat_shm[{node}]" rackgate/checks/test_declared.py\n')
    new = migrate_text(old, servers)
    assert new == ('paths = ["SRV-BOOT::server", "PLAT-SHM"]\n'
                   'fail = ["FAB-STATE::node2-card3"]\n'
                   'f"PLAT-SHM::{node}" rackgate/checks/declared.py\n')
    assert migrate_text(new, servers) == new


def test_an_id_turns_into_an_absolute_test_path():
    arg = path_arg("fabric/test_links.py::test_link_training[node1-card0]")
    path, _, name = arg.partition("::")
    assert Path(path).is_absolute() and Path(path) == CHECKS / "declared.py" and Path(path).is_file()
    assert name == "FAB-TRAINING::node1-card0"
    assert path_arg("PLAT-DRIVER") == f"{CHECKS / 'declared.py'}::PLAT-DRIVER"


def test_every_moved_check_names_a_declared_rows_item():
    """MOVED's targets are the declared rows' items (a row renamed or undeclared again fails here),
    and the old module::test of each check since declared is there (the ones that recorded facts:
    SRV-BOOT's cold start, BENCH-AGGREGATE's figures, the bracketed counters)."""
    from rackgate import registry
    from rackgate.ids import MOVED
    names = {check_id(f"rackgate/checks/{moved}") for moved in MOVED.values()}
    assert names <= set(registry.checks()), names - set(registry.checks())
    assert {"serving/test_boot.py::test_boot", "serving/test_bench.py::test_per_gpu_throughput",
            "fabric/test_errors.py::test_fab_errors"} <= set(MOVED)
    assert check_id("rackgate/checks/serving/test_bench.py::test_per_gpu_throughput") == \
        "BENCH-AGGREGATE"


@pytest.mark.parametrize("nodeid, check, place", [
    ("PLAT-SHM::node2", "PLAT-SHM", "node2"), ("SRV-BOOT::server", "SRV-BOOT", "server"),
    ("FAB-P2P::node1-node2", "FAB-P2P", "node1-node2"), ("PLAT-SHM", "PLAT-SHM", ""),
    ("rackgate/checks/regression/test_regression.py::test_facts_within_tolerance[ualink.local_accels]",
     "rackgate/checks/regression/test_regression.py::test_facts_within_tolerance", "ualink.local_accels")])
def test_an_item_names_its_check_and_its_place(nodeid, check, place):
    from rackgate.ids import check_of, place_of
    assert (check_of(nodeid), place_of(nodeid)) == (check, place)


def test_the_migration_command_rewrites_the_files_it_is_given_and_says_so(tmp_path, capsys):
    from rackgate.registry import migrate
    case = tmp_path / "case.toml"
    case.write_text('fail = ["rackgate/checks/test_declared.py::test_srv_boot"]\n')
    assert migrate.main([str(case)]) == 0 and case.read_text() == 'fail = ["SRV-BOOT::server"]\n'
    assert "1 of 1 file(s) rewritten" in capsys.readouterr().out
    assert migrate.main([str(case)]) == 0 and "0 of 1" in capsys.readouterr().out   # re-runnable
    assert migrate.main([str(tmp_path / "none.toml")]) == 2 and "no such file" in capsys.readouterr().err
