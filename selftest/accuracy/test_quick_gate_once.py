"""The quick gate's run is one read per session (rackgate/fixtures/quick_gate.py): the second
check that asks (ACC-UNDER-LOAD after ACC-QUICK) gets the same read, never a second run, its
could-not-observe and its hang too."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.config.accuracy import AccuracyExpect
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.quick_gate import QuickGate, settled
from rackgate.sim.gsm8k import data_dir

pytestmark = pytest.mark.unit


class HungPreflight:
    """A per_rank whose every-rank request hangs on one rank; the questions must not follow."""

    def __init__(self) -> None:
        self.asked = 0

    def ask(self, prompts, max_tokens, stream=False):
        self.asked += 1
        return SimpleNamespace(hang=lambda: "1 of 16 requests still in flight after 2.0s while 15 came back",
                               nothing_back=lambda: "", evidence=lambda: "dp9: in flight")


def gate(d) -> QuickGate:
    return QuickGate(SimpleNamespace(accuracy=AccuracyExpect(gsm8k_dir=str(d))), lambda line: None)


def test_a_hang_before_the_questions_is_read_once_and_no_question_is_asked():
    g, pr = gate(data_dir()), HungPreflight()
    first = g.read(SimpleNamespace(url="http://head:8000"), pr)
    assert g.read(SimpleNamespace(url="http://head:8000"), pr) is first
    assert pr.asked == 1 and first.result is None and first.pre.hang()


def test_a_run_that_could_not_look_says_why_to_every_asker(tmp_path):
    g, pr = gate(tmp_path / "no-gsm8k"), HungPreflight()
    read = g.read(None, pr)
    assert pr.asked == 0 and read.blind and g.read(None, pr) is read
    for row in ("ACC-QUICK", "ACC-UNDER-LOAD"):
        with pytest.raises(CouldNotObserve) as e:
            settled(read, row, None, None)
        assert str(e.value) == read.blind
