"""SRV-DEADLOCK declared (rackgate/gates/serverlogs.py `rank_synced`, one item per DP rank): the rank
that did not log `_sync_dp_state failed` while the others did FAILS with its last KV line, the others
PASS; timeouts logged without rank labels name the quiet node; a hang with no timeout logged is
SRV-DEADLOCK's on the hung rank; degenerate answers are SRV-SANITY's; nothing back is could not observe."""
from __future__ import annotations

import pytest

from rackgate.atom.fanout import Ask, Got
from rackgate.atom.perrank import Routing, Spread
from rackgate.errors import CouldNotObserve
from rackgate.gates import serverlogs
from rackgate.gates.declare import Finding, Ranked
from rackgate.probes.deadlock import Load, Synced
from rackgate.probes.served import Hang

pytestmark = pytest.mark.unit

TABLE = {r: "node1" if r < 4 else "node2" for r in range(8)}
URL = "http://head:8000"
RACK = None  # the judge reads nothing of the rack file
TIMEOUT = "Engine {r:03d}: _sync_dp_state failed: Timed out waiting 1800000ms"
KV = "Engine {r:03d}: prompt throughput: 0.0 tok/s, generation throughput: 0.0 tok/s, KV usage: 98.6%"


def _spread(texts: dict[int, str], hung: tuple[int, ...] = (), unreplied: tuple[int, ...] = ()) -> Spread:
    got = [Got(Ask("p", r), text=t, replied=True, status=200) for r, t in texts.items()]
    got += [Got(Ask("p", r), replied=False, error="read timed out") for r in unreplied]
    return Spread(got, len(got) + len(hung), len(hung), 1.0, hung=[Ask("p", r) for r in hung],
                  bound_s=30.0 if hung else None, routing=Routing(dict(TABLE), True))


ANSWERED = {r: " the summary goes on" for r in TABLE}


def _ranks(timed_out: set[int], *, spread: Spread | None = None, hang: Hang | None = None,
           unlabelled: dict[str, int] | None = None, kv: set[int] = frozenset()) -> dict[int, Synced]:
    run = Load(URL, spread if spread is not None else _spread(ANSWERED), 120.0, hang, unlabelled or {},
               {"node1": range(0, 4), "node2": range(4, 8)}, ())
    return {r: Synced(r, n, TIMEOUT.format(r=r) if r in timed_out else "", KV.format(r=r) if r in kv else "", run)
            for r, n in TABLE.items()}


def _judge(ranks: dict[int, Synced], r: int) -> list[str]:
    return serverlogs.rank_synced(Ranked(r, TABLE[r], ranks), RACK, f"{TABLE[r]}/dp{r}")


def test_healthy_every_rank_passes():
    ranks = _ranks(set())
    assert all(_judge(ranks, r) == [] for r in TABLE)


def test_the_rank_that_did_not_log_the_timeout_fails_with_its_kv_line_the_others_pass():
    ranks = _ranks(set(TABLE) - {6}, kv={6})
    assert all(_judge(ranks, r) == [] for r in TABLE if r != 6)
    (line,) = _judge(ranks, 6)
    assert not isinstance(line, Finding) or not line.row, line  # the row's own finding at this rank's item
    assert line.startswith("7 of 8 ranks logged `_sync_dp_state failed` (Engine 000: _sync_dp_state failed"), line
    assert "the rank(s) that did not: node2/dp6" in line and "KV usage: 98.6%" in line, line


def test_unlabelled_timeouts_name_the_node_whose_ranks_are_quiet():
    ranks = _ranks(set(), unlabelled={"node1": 4, "node2": 3})
    assert all(_judge(ranks, r) == [] for r in range(4)), "node1 logged one timeout per rank"
    (f,) = _judge(ranks, 5)
    assert isinstance(f, Finding) and f.where == "node2" and not f.row, (f, f.where)
    assert "logged without rank labels (launch.rank_labels off); the rank that did not log it is on: node2 " \
           "(logged 3 timeouts for dp4-dp7)" in f, f


def test_a_hang_with_no_timeout_logged_is_srv_deadlocks_on_the_hung_rank():
    spread = _spread({r: t for r, t in ANSWERED.items() if r != 3}, hung=(3,))
    ranks = _ranks(set(), spread=spread, hang=Hang("1 of 8 requests still in flight", "node1/dp3", ranks=(3,)))
    (f,) = _judge(ranks, 3)
    assert isinstance(f, Finding) and (f.row, f.where, f.also) == ("SRV-DEADLOCK", "node1/dp3", ("SRV-DEADLOCK",))
    assert f.startswith("no rank logged `_sync_dp_state failed`; 1 of 8 requests still in flight"), f
    assert _judge(ranks, 2) == [], "its request came back"
    unnamed = _ranks(set(), spread=spread, hang=Hang("1 of 8 requests still in flight", URL))
    assert all(isinstance(_judge(unnamed, r)[0], Finding) for r in TABLE), "the hint names no rank: every item"


def test_degenerate_answers_under_load_are_srv_sanitys_on_their_ranks():
    ranks = _ranks(set(), spread=_spread({**ANSWERED, 5: "!!!!!!!!!!!!!!!!!!!!"}))
    (f,) = _judge(ranks, 5)
    assert isinstance(f, Finding) and (f.row, f.where) == ("SRV-SANITY", "node2/dp5"), (f.row, f.where)
    assert f.startswith("SRV-DEADLOCK's load: 1 of 8 answers degenerate"), f
    with pytest.raises(CouldNotObserve, match=r"degenerate at node2/dp5 \(SRV-SANITY\)"):
        _judge(ranks, 0)


def test_nothing_answered_and_no_line_logged_is_could_not_observe():
    ranks = _ranks(set(), spread=_spread({}, unreplied=tuple(TABLE)))
    with pytest.raises(CouldNotObserve, match="8 of 8 requests unanswered after 120s .serving.deadlock_window_s., "
                                              "none came back.*not a deadlock by the log"):
        _judge(ranks, 0)


def test_a_rank_of_which_nothing_was_read_is_not_judged():
    ranks = _ranks(set())
    del ranks[4]
    with pytest.raises(CouldNotObserve, match="dp4: nothing came back"):
        _judge(ranks, 4)
    assert serverlogs.synced_shown(Ranked(4, "node2", ranks), RACK) == []
