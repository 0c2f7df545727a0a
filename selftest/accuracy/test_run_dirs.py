"""ACC-GSM8K's lm-eval output: each run reads only what its own lm_eval wrote.

Two suite runs that start in the same second in one checkout (the fault matrix does, so does a CI
worker qualifying two racks) once shared reports/lm-eval/run-<second>/ and each read the newest
results file there: one run's score was judged as the other's (a faulted rack scored healthy)."""
import json
import os

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.gsm8k import lmeval

pytestmark = pytest.mark.unit

NOW = 1_796_000_000.0  # one instant for both runs: the same second


def _write_results(out, stamp, score):
    d = out / "sim-model"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"results_{stamp}.json").write_text(json.dumps({"results": {"gsm8k": {"exact_match,strict-match": score}}}))
    return d


def test_two_runs_in_one_second_get_their_own_directories(tmp_path):
    a = lmeval.new_run_dir(tmp_path / "reports" / "lm-eval", NOW)
    b = lmeval.new_run_dir(tmp_path / "reports" / "lm-eval", NOW)
    assert a != b and a.is_dir() and b.is_dir()
    assert a.parent == b.parent == tmp_path / "reports" / "lm-eval"
    assert a.name.startswith("run-") and b.name[:len("run-YYYYmmdd-HHMMSS")] == a.name[:len("run-YYYYmmdd-HHMMSS")]


def test_a_run_never_finds_the_other_runs_results(tmp_path):
    a = lmeval.new_run_dir(tmp_path, NOW)
    b = lmeval.new_run_dir(tmp_path, NOW)
    _write_results(a, "2026-12-04T17-46-30", 0.94)
    newer = _write_results(b, "2026-12-04T17-46-31", 0.98) / "results_2026-12-04T17-46-31.json"
    os.utime(newer, (NOW + 60, NOW + 60))  # the other run finished last
    res, _ = lmeval.find_outputs(a, "gsm8k")
    assert res.parent.parent == a and "17-46-30" in res.name


def test_an_output_dir_that_cannot_be_made_is_could_not_observe(tmp_path):
    blocker = tmp_path / "reports"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(CouldNotObserve, match=r"accuracy.output_dir .*reports/lm-eval: no run directory"):
        lmeval.new_run_dir(blocker / "lm-eval", NOW)
