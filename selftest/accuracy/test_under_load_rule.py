"""ACC-UNDER-LOAD's agreement rule (rackgate/gates/accuracy.py `Agreement`): the accuracy under load may
fall below the quick gate's by at most z standard errors of the difference."""
import pytest

from rackgate.gates.accuracy import Agreement
from rackgate.gsm8k.under_load import Fixed

pytestmark = pytest.mark.unit


def test_same_accuracy_agrees():
    assert not Agreement(0.96, 124, 0.96, 32, 2.58).falls
    assert not Agreement(1.0, 124, 1.0, 32, 2.58).falls  # no spread, no difference


def test_a_small_dip_within_the_bound_agrees_and_a_collapse_falls():
    assert not Agreement(0.96, 124, 0.90, 32, 2.58).falls  # 2 of 32 more wrong: sampling
    a = Agreement(0.976, 124, 0.094, 32, 2.58)
    assert a.falls
    assert "0.094 (32 questions)" in a.describe() and "0.976 (124 questions)" in a.describe()


def test_better_under_load_never_falls():
    assert not Agreement(0.90, 124, 1.0, 32, 2.58).falls


def test_fixed_pace_never_ramps_down():
    p = Fixed(8, 30.0)
    p.answered(1.0, 10)
    p.answered(50.0, 10)  # far slower per token: the quick gate would halve
    assert p.in_flight == 8
