"""The quick gate's run is one read per session (rackgate/fixtures/quick_gate.py): the second
check that asks (ACC-UNDER-LOAD after ACC-QUICK) gets the same read, never a second run, its
could-not-observe and its hang too."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.config.accuracy import AccuracyExpect
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.quick_gate import QuickGate, QuickRead, settled
from rackgate.report.verdict import CheckFailed
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


class Spread:
    """A perrank.Spread as settle() reads it: `hung` ranks in flight past the bound, the others back."""

    def __init__(self, hung: list[int]):
        self.hung, self.routing = hung, SimpleNamespace(table={9: "node3"})

    def hang(self):
        return "1 of 40 GSM8K questions still in flight after 2.0s while 39 came back" if self.hung else ""

    def hung_ranks(self):
        return self.hung

    def hang_where(self, url):
        return "node3/dp9"

    def nothing_back(self):
        return ""

    def evidence(self):
        return "dp9: in flight"


class Shown:
    def __init__(self) -> None:
        self.titles: list[str] = []

    def attach(self, title, text, kind="text"):
        self.titles.append(title)


@pytest.mark.parametrize("row", ["ACC-QUICK", "ACC-UNDER-LOAD"])
def test_a_hang_among_the_questions_is_the_asking_rows_failed_cross_referenced_to_the_deadlock(row):
    """Whichever check reads the run, the questions' hang is its FAILED naming the rank, recorded for
    SRV-DEADLOCK too (`also`) -- never a could-not-observe."""
    read, shown = QuickRead(Spread([]), hang=Spread([9]), scored=7, blind="hung"), Shown()
    with pytest.raises(CheckFailed) as e:
        settled(read, row, SimpleNamespace(url="http://head:8000", attached=True), shown)
    assert (e.value.row_id, e.value.where, e.value.also) == (row, "node3/dp9", ("SRV-DEADLOCK",))
    assert "7 of the quick gate's GSM8K questions scored before the hang" in e.value.seen
    assert f"{row}: every rank asked once (the quick gate's run)" in shown.titles
