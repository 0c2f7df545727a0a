"""SRV-GOLDEN declared (rackgate/gates/golden.py `rank_golden`, one item per DP rank): the drifting
rank FAILS and the others PASS, against the golden set or, recording, the majority; recording keeps
the golden set of the ranks that agree (`golden_kept`); errors while others answered are the rank's
FAILED; a hang is SRV-DEADLOCK's on the hung rank; the ranks not known is one item saying the share;
nothing read refuses to judge."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.config.serving import ServingExpect
from rackgate.errors import CouldNotObserve
from rackgate.gates import golden
from rackgate.gates.declare import UNRANKED, Finding, Ranked
from rackgate.probes import golden as probe
from rackgate.probes.golden import Asked, Completion, Golden
from rackgate.probes.served import Hang

pytestmark = pytest.mark.unit

TABLE = {r: "node1" if r < 2 else "node2" for r in range(4)}
RACK = SimpleNamespace(serving=ServingExpect())
GOOD = (" 1,", " 2,", " 3,", " 4")
ODD = (" 1,", " 2,", " 4,", " 4")


def _answers(odd: set[int] = frozenset(), table=TABLE) -> tuple[Completion, ...]:
    ranks = list(table) if table else [None] * 4
    return tuple(Completion(p, "".join(ODD if r in odd else GOOD), ODD if r in odd else GOOD, rank=r)
                 for p in ("count", "list") for r in ranks)


def _gold(answers) -> probe.GoldenSet:
    return probe.load(probe.recording(list(answers), "1", 4, 0, 16))


def _ranks(run: Asked, table=TABLE) -> dict[int, Golden]:
    if not table:
        return {UNRANKED: Golden(UNRANKED, "", run)}
    return {r: Golden(r, n, run) for r, n in table.items()}


def _run(answers, *, recording=False, gold=None, table=TABLE, **kw) -> Asked:
    return Asked("http://head:8000", "1", recording, gold, 4, 0, 16, dict(table), (0.0, 0.0), tuple(answers),
                 asked=kw.pop("asked", len(answers) + len(kw.get("errors", ()))), **kw)


def _judge(ranks, r):
    where = f"{TABLE[r]}/dp{r}" if r != UNRANKED else "http://head:8000"
    return golden.rank_golden(Ranked(r, TABLE.get(r, ""), ranks), RACK, where)


def test_healthy_every_rank_passes_against_the_golden_set():
    ranks = _ranks(_run(_answers(), gold=_gold(_answers())))
    assert all(_judge(ranks, r) == [] for r in TABLE)
    assert golden.golden_kept(Ranked(0, "node1", ranks), "node1/dp0") == {}, "comparing keeps nothing"


def test_the_drifting_rank_fails_naming_its_share_and_the_others_pass():
    ranks = _ranks(_run(_answers(odd={3}), gold=_gold(_answers())))
    assert all(_judge(ranks, r) == [] for r in (0, 1, 2))
    (line,) = _judge(ranks, 3)
    assert line.startswith("2 of 2 of dp3's answers drift; 2 of 8 answers (25%) drift from the golden set"), line
    assert "1 of 4 ranks drift (dp3), the others match: hardware" in line and "node2/dp3 'count' at position 4" in line


def test_recording_holds_the_ranks_to_the_majority_and_keeps_only_the_ranks_that_agree():
    ranks = _ranks(_run(_answers(odd={1}), recording=True))
    (line,) = _judge(ranks, 1)
    assert "against the answer most ranks gave (recording)" in line, line
    assert _judge(ranks, 0) == []
    kept = golden.golden_kept(Ranked(0, "node1", ranks), "node1/dp0")
    assert set(kept) == {probe.KEY}
    assert {p: [a["ranks"] for a in xs] for p, xs in kept[probe.KEY]["answers"].items()} == \
        {"count": [[0, 2, 3]], "list": [[0, 2, 3]]}
    assert kept == golden.golden_kept(Ranked(3, "node2", ranks), "node2/dp3"), "every item keeps the same set"


def test_a_rack_of_one_rank_is_judged_on_its_unattributed_answers():
    """One DP rank is asked without the hint (every request lands on it), so its answers carry no
    rank: they are its, recording and comparing (before: "dp0: none of its golden prompts came
    back", could not observe on a healthy one-GPU rack; found by the real engines, wave 11)."""
    one = {0: "node1"}
    answers = tuple(Completion(p, "".join(GOOD), GOOD) for p in ("count", "list"))  # no rank, as asked
    assert _judge(_ranks(_run(answers, recording=True, table=one), one), 0) == []
    assert _judge(_ranks(_run(answers, gold=_gold(answers), table=one), one), 0) == []
    odd = tuple(Completion(a.prompt, "".join(ODD), ODD) for a in answers)
    (line,) = _judge(_ranks(_run(odd, gold=_gold(answers), table=one), one), 0)
    assert "drift from the golden set" in line, line


def test_errors_while_others_answered_fail_that_rank_and_every_one_refused_is_could_not_observe():
    good = [a for a in _answers() if a.rank != 2]
    ranks = _ranks(_run(good, gold=_gold(_answers()), errors=((2, "count", "HTTP 500: boom"), (2, "list", "HTTP 500"))))
    (line,) = _judge(ranks, 2)
    assert line.startswith("2 of 8 golden prompts answered with an error while the others were answered (e.g. "
                           "node2/dp2: HTTP 500: boom)"), line
    assert _judge(ranks, 0) == []
    none = _ranks(_run([], gold=_gold(_answers()), errors=tuple((r, "count", "HTTP 503") for r in TABLE)))
    with pytest.raises(CouldNotObserve, match="none of 4 golden prompts was answered"):
        _judge(none, 0)


def test_a_hang_is_srv_deadlocks_on_the_hung_rank_and_the_others_are_not_judged():
    hang = Hang("1 of 8 requests still in flight after 30.0s", "node1/dp1", ranks=(1,))
    ranks = _ranks(_run(_answers(), gold=_gold(_answers()), hang=hang))
    (f,) = _judge(ranks, 1)
    assert isinstance(f, Finding) and (f.row, f.where) == ("SRV-DEADLOCK", "node1/dp1"), f
    assert f.startswith("SRV-GOLDEN's requests: 1 of 8 requests still in flight"), f
    with pytest.raises(CouldNotObserve, match=r"hung at node1/dp1 \(see SRV-DEADLOCK\)"):
        _judge(ranks, 0)


def test_ranks_not_known_is_one_item_saying_the_share():
    answers = _answers(table={})
    gold = _gold(answers)
    drifted = tuple(Completion(a.prompt, "".join(ODD), ODD) if i == 0 else a for i, a in enumerate(answers))
    ranks = _ranks(_run(drifted, gold=gold, table={}), table={})
    (line,) = _judge(ranks, UNRANKED)
    assert line.startswith("1 of 8 answers (12%) drift from the golden set"), line
    assert "which DP rank served which answer is not known (no rank hint)" in line, line
    assert _judge(_ranks(_run(answers, gold=gold, table={}), table={}), UNRANKED) == []


def test_nothing_read_refuses_to_judge():
    ranks = _ranks(_run(_answers(), gold=_gold(_answers())))
    del ranks[2]
    with pytest.raises(CouldNotObserve, match="dp2: nothing came back"):
        _judge(ranks, 2)
    blind = _ranks(_run([], gold=_gold(_answers()), blind="none of 16 requests came back: connection refused"))
    with pytest.raises(CouldNotObserve, match="none of 16 requests came back"):
        _judge(blind, 0)
    missing = _ranks(_run(_answers(), gold=_gold([a for a in _answers() if a.prompt == "count"])))
    with pytest.raises(CouldNotObserve, match="the golden set has no answer to list: record it again"):
        _judge(missing, 0)


def test_the_probe_says_why_no_golden_set_can_be_compared_in_the_same_words():
    with pytest.raises(CouldNotObserve, match="no baseline recorded .*pytest --record-baseline"):
        probe._golden_set(SimpleNamespace(baseline=None))
    with pytest.raises(CouldNotObserve, match="the baseline b.json holds no golden set"):
        probe._golden_set(SimpleNamespace(baseline=SimpleNamespace(sets={}, path="b.json")))
    with pytest.raises(CouldNotObserve, match="b.json: the baseline's golden set is not one rackgate wrote"):
        probe._golden_set(SimpleNamespace(baseline=SimpleNamespace(sets={probe.KEY: {"x": 1}}, path="b.json")))


def test_the_rack_file_can_say_it_does_not_apply():
    assert golden.golden_applies(RACK) == ""
    off = SimpleNamespace(serving=ServingExpect(golden=False))
    assert golden.golden_applies(off).startswith("serving.golden = false in the rack file")
