"""The unit tier's guard and the one-tier rule (selftest/tiers.py); the end-to-end proof that
selftest/conftest.py applies both is selftest/test_tier_marks.py."""
import os
import socket
import subprocess

import pytest

from rackgate import simrack
from selftest import tiers

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("found, said", [([], "no tier mark"), (["suite", "unit"], "2 tier marks (suite, unit)")])
def test_a_module_without_exactly_one_tier_is_named_in_one_line(found, said):
    line = tiers.problem("selftest.test_x", found)
    assert "selftest.test_x" in line and said in line and "\n" not in line
    assert tiers.problem("selftest.test_x", ["unit"]) == ""


def test_the_hand_out_order_puts_the_matrix_first_and_the_unit_tier_last():
    assert min(tiers.TIERS, key=lambda t: tiers.TIERS[t][1]) == "matrix"
    assert max(tiers.TIERS, key=lambda t: tiers.TIERS[t][1]) == "unit"


def test_the_unit_guard_refuses_a_process_a_server_and_a_sim_build_naming_the_test():
    before = (subprocess.Popen.__init__, socket.socket.listen, os.fork)
    with tiers.unit_guard("selftest/test_x.py::test_y"):
        with pytest.raises(tiers.OutsideUnitTier, match=r"test_x.py::test_y is marked `unit` but started a subprocess"):
            subprocess.run(["true"])
        with pytest.raises(tiers.OutsideUnitTier, match="os.fork"):
            os.fork()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            with pytest.raises(tiers.OutsideUnitTier, match="listened on a socket"):
                s.listen()
        with pytest.raises(tiers.OutsideUnitTier, match="built the sim"):
            simrack.build(None, [])  # type: ignore[arg-type]
    assert (subprocess.Popen.__init__, socket.socket.listen, os.fork) == before
