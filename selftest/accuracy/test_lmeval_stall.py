"""lm-eval under the hang rule (rackgate/gsm8k/lmeval.py): its progress line read against the
bound of its own answers (`Stall`), and its own line for a request that timed out (`timed_out`,
the format of lm-eval's api_models.py: f"Exception:{e!r}, ..., retrying.")."""
import pytest

from rackgate.gsm8k.lmeval import Stall, progress_of, timed_out

pytestmark = pytest.mark.unit


def test_a_stall_is_read_only_past_the_bound_of_the_answers_so_far():
    s = Stall(floor_s=30.0, factor=10.0)
    assert s.seen((0, 100), 0.0) is None            # the first progress line starts the clock
    assert s.seen((0, 100), 500.0) is None          # nothing answered yet: not a hang (nothing back)
    assert s.seen((5, 100), 504.0) is None          # answers: the longest wait so far is 504 s
    s = Stall(floor_s=30.0, factor=10.0)
    s.seen((0, 100), 0.0)
    s.seen((3, 100), 2.0)
    s.seen((9, 100), 5.0)                           # longest wait 3 s: bound max(30, 30)
    assert s.seen((9, 100), 34.0) is None
    assert s.seen((9, 100), 36.0) == pytest.approx(31.0)
    s.looked(36.0)                                  # every rank answered: the clock starts again
    assert s.seen((9, 100), 60.0) is None
    assert s.seen((100, 100), 200.0) is None        # everything answered: nothing in flight


def test_a_slow_run_raises_its_own_bound():
    s = Stall(floor_s=30.0, factor=10.0)
    s.seen((0, 10), 0.0)
    s.seen((1, 10), 20.0)                           # one answer every 20 s: the bound is 200 s
    assert s.bound() == 200.0
    assert s.seen((1, 10), 150.0) is None


LINES = ("Requesting API:  12%|█▏        | 12/100 [00:31<03:40,  2.51s/it]\n"
         "2026-12-05:05:20:11 ERROR    [models.api_models:557] Exception:TimeoutError(), (no outputs), retrying.\n"
         "2026-12-05:05:20:11 INFO     [models.api_models:608] Retry attempt 1\n")


def test_lm_evals_own_timeout_line_is_read_and_nothing_else_is():
    assert timed_out(LINES).endswith("Exception:TimeoutError(), (no outputs), retrying.")
    assert progress_of(LINES) == (12, 100)
    assert timed_out("... Exception:ClientResponseError(...), retrying.") == ""
    assert timed_out("aiohttp: Exception:ServerTimeoutError('Timeout on reading data from socket'), retrying")
    assert timed_out("") == ""
