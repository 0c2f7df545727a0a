"""The sequential test: its boundaries, its decisions, and its error rates (a small Monte Carlo;
benchmarks/quick_gate_error_rates.py prints the full figures)."""
import math
import random

import pytest

from rackgate.config.accuracy import AccuracyExpect
from rackgate.gates.sequential import Sprt
from rackgate.gsm8k.setup import sprt_for

pytestmark = pytest.mark.unit

S = sprt_for(AccuracyExpect())


def test_defaults_follow_the_validated_figure():
    assert S.p_pass == pytest.approx(0.9621 - 0.0106) and S.p_fail == 0.90
    assert S.upper == pytest.approx(math.log(0.95 / 0.01)) and S.lower == pytest.approx(math.log(0.05 / 0.99))


def test_a_broken_server_is_failed_within_ten_questions():
    assert S.fastest_fail <= 10
    d = [S.decide(n, 0) for n in range(1, 11)]
    assert d[S.fastest_fail - 1].verdict == "fail" and d[S.fastest_fail - 2].verdict is None


def test_pass_needs_evidence():
    assert S.decide(S.fastest_pass - 1, S.fastest_pass - 1).verdict is None
    assert S.decide(S.fastest_pass, S.fastest_pass).verdict == "pass"


def test_truncation_and_exhaustion():
    s = Sprt(0.9515, 0.90, 0.01, 0.05, max_n=50)
    mid = round(50 * s.neutral)
    assert s.decide(50, mid + 1).how == "question limit"
    assert s.decide(50, mid + 1).verdict == "pass" and s.decide(50, mid - 1).verdict == "fail"
    full = s.decide(20, 19, population=20)
    assert full.how == "all questions" and full.verdict == "fail"  # 0.95 < 0.9515: exact
    assert s.decide(20, 20, population=20).verdict == "pass"


def test_rejects_nonsense():
    with pytest.raises(ValueError):
        Sprt(0.9, 0.95, 0.01, 0.05, 400)
    with pytest.raises(ValueError):
        AccuracyExpect(quick_fail_accuracy=0.96)


def _oc(p: float, runs: int, seed: int) -> float:
    rnd, passes = random.Random(seed), 0
    population = 1319
    correct = round(p * population)
    items = [1] * correct + [0] * (population - correct)
    for _ in range(runs):
        rnd.shuffle(items)
        k = 0
        for n, x in enumerate(items, 1):
            k += x
            d = S.decide(n, k, population)
            if d.verdict:
                passes += d.verdict == "pass"
                break
    return passes / runs


def test_error_rates_hold_where_stated():
    assert _oc(0.90, 400, 1) <= S.false_pass + 0.02       # a rack at p_fail is rarely passed
    assert 1 - _oc(0.9515, 400, 2) <= S.false_fail + 0.04  # a rack at the floor is rarely failed
    assert _oc(0.0, 50, 3) == 0 and _oc(0.962, 200, 4) >= 0.97
