"""The quick gate's run is one read per session (rackgate/gsm8k/session.py `QuickGate`, the
the session's runs the `served` fixture hands the probes, `runs.quick_gate`): the second probe that asks (ACC-UNDER-LOAD's after
ACC-QUICK's) gets the same read, never a second run, its could-not-observe and its hang too; each
asker's judge words the hang as its own (rackgate/gates/accuracy.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.config.accuracy import AccuracyExpect
from rackgate.errors import CouldNotObserve
from rackgate.gates import accuracy
from rackgate.gates.declare import Finding
from rackgate.gsm8k.session import QuickGate, QuickRead
from rackgate.probes import acc
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


class Served:
    """The server object as the ACC probes see it: the session's quick gate read, the hung ranks' stacks."""

    def __init__(self, read: QuickRead):
        self.read, self.url, self.asked = read, "http://head:8000", 0

    @property
    def runs(self):
        """The session's runs handed in beside the server: only the quick gate's is asked here."""
        def quick_gate():
            self.asked += 1
            return self.read
        return SimpleNamespace(quick_gate=quick_gate)

    def stacks(self, ranks):
        return [(f"dp{r}: stacks", "Thread 1 ...") for r in ranks], f"stacks of dp{ranks[0]}"


def test_a_hang_before_the_questions_is_read_once_and_no_question_is_asked():
    g, pr = gate(data_dir()), HungPreflight()
    first = g.read(SimpleNamespace(url="http://head:8000"), pr)
    assert g.read(SimpleNamespace(url="http://head:8000"), pr) is first
    assert pr.asked == 1 and first.result is None and first.pre.hang()


def test_a_run_that_could_not_look_says_why_to_every_asker(tmp_path):
    g, pr = gate(tmp_path / "no-gsm8k"), HungPreflight()
    read = g.read(None, pr)
    assert pr.asked == 0 and read.blind and g.read(None, pr) is read
    s = Served(read)
    for probe, judge in ((acc.quick, accuracy.quick_passes), (acc.under_load, accuracy.under_load_agrees)):
        with pytest.raises(CouldNotObserve) as e:
            judge(probe(s), None, s.url)
        assert str(e.value) == read.blind


class Spread:
    """A perrank.Spread as the probes read it: `hung` ranks in flight past the bound, the others back."""

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


@pytest.mark.parametrize("row", ["ACC-QUICK", "ACC-UNDER-LOAD"])
def test_a_hang_among_the_questions_is_the_asking_rows_failed_cross_referenced_to_the_deadlock(row):
    """Whichever check reads the run, the questions' hang is its FAILED naming the rank, recorded for
    SRV-DEADLOCK too (`also`) -- never a could-not-observe; the hung rank's stacks are its evidence."""
    s = Served(QuickRead(Spread([]), hang=Spread([9]), scored=7, blind="hung"))
    probe, judge, shows = {"ACC-QUICK": (acc.quick, accuracy.quick_passes, accuracy.quick_shown),
                           "ACC-UNDER-LOAD": (acc.under_load, accuracy.under_load_agrees,
                                              accuracy.under_load_shown)}[row]
    read = probe(s)
    [f] = judge(read, None, s.url)
    assert isinstance(f, Finding) and (f.row, f.where, f.also) == (row, "node3/dp9", ("SRV-DEADLOCK",))
    assert "7 of the quick gate's GSM8K questions scored before the hang" in f and "stacks of dp9" in f
    titles = [x.name for x in shows(read, None)]
    assert f"{row}: every rank asked once (the quick gate's run)" in titles and "dp9: stacks" in titles


def test_the_preflights_hang_is_the_deadlocks_naming_the_asking_row():
    s = Served(QuickRead(Spread([9])))
    [f] = accuracy.quick_passes(acc.quick(s), None, s.url)
    assert (f.row, f.where) == ("SRV-DEADLOCK", "node3/dp9") and f.startswith("ACC-QUICK's requests: ")
    u = acc.under_load(s)
    assert not u.ran and s.asked == 2  # the same read, and no questions under load after a hang
