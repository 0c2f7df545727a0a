"""A hang is recorded by the ordering, never written into the server object (issue 35): the hang
rule's finding (`gates/srv.py` `hang_finding`, raised by a declared item as its judge's
`Finding`) is SRV-DEADLOCK's FAILED from the asking row's item (or the asking row's, with
SRV-DEADLOCK as `also`); the ordering (rackgate/hooks/order.py) records the finding's row where
it was seen, and the `server` fixture's rule (`blocked`) reads it there: every later check is not
run, pointing at SRV-DEADLOCK -- the row itself excepted."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.atom.fanout import Ask, Got
from rackgate.atom.perrank import Routing, Spread
from rackgate.errors import NotRun
from rackgate.fixtures.order import failed_at
from rackgate.fixtures.server import blocked
from rackgate.gates.declare import Finding
from rackgate.gates.srv import hang_finding
from rackgate.hooks import order, outcome
from rackgate.report.verdict import CheckFailed, fail

pytestmark = pytest.mark.unit

TABLE = {0: "node1", 1: "node1", 2: "node2", 3: "node2"}


def _hung_spread() -> Spread:
    """dp2 never answered while the other three came back."""
    got = [Got(Ask("p", r), text="Paris", replied=True, seconds=0.4) for r in (0, 1, 3)]
    return Spread(got, 4, 1, 30.5, hung=[Ask("p", 2)], bound_s=30.0, slowest_s=0.4,
                  routing=Routing(dict(TABLE), True))


URL = "http://server:8000"


def _hang(row_id: str, own: str | None = None) -> None:
    """The hang rule's finding on `row_id`'s requests, raised as a declared item raises its judge's
    placed Finding (rackgate/checks/declared.py)."""
    spread = _hung_spread()
    f = hang_finding(row_id, spread.hang() or "", spread.hang_where(URL), own)[0]
    assert isinstance(f, Finding)
    fail(f.row or row_id, f.where, str(f), f.means, also=f.also)


def test_a_hang_is_srv_deadlocks_finding():
    with pytest.raises(CheckFailed) as e:
        _hang("SRV-SANITY")
    assert e.value.row_id == "SRV-DEADLOCK" and e.value.where == "node2/dp2", (e.value.row_id, e.value.where)
    assert "SRV-SANITY's requests: 1 of 4 requests still in flight" in str(e.value)


def test_a_hang_with_the_rows_own_finding_is_that_rows_and_srv_deadlocks_too():
    with pytest.raises(CheckFailed) as e:
        _hang("ACC-UNDER-LOAD", own="3 questions scored")
    assert e.value.row_id == "ACC-UNDER-LOAD" and e.value.also == ("SRV-DEADLOCK",), (e.value.row_id, e.value.also)


class _Item:
    def __init__(self, rid: str):
        self.config = SimpleNamespace(stash=pytest.Stash())
        order.pytest_configure(self.config)
        self._rid = rid

    def get_closest_marker(self, name):
        return SimpleNamespace(args=(self._rid,)) if name == "row" else None


def _report(item: _Item, exc: BaseException | None, cls: str) -> None:
    """The ordering's makereport wrapper, as pluggy drives it, over a report already classified."""
    call = SimpleNamespace(when="call", excinfo=SimpleNamespace(value=exc) if exc is not None else None)
    report = SimpleNamespace(user_properties=[(outcome.KEY, cls)])
    gen = order.pytest_runtest_makereport(item, call)
    next(gen)
    with pytest.raises(StopIteration):
        gen.send(report)


def _raised(fn) -> CheckFailed:
    try:
        fn()
    except CheckFailed as e:
        return e
    raise AssertionError("no finding raised")


def test_the_ordering_records_the_hang_and_the_later_checks_are_not_run_pointing_at_srv_deadlock():
    item = _Item("SRV-SANITY")
    assert blocked(item.config) is None
    _report(item, _raised(lambda: _hang("SRV-SANITY")), outcome.FAILED)
    assert failed_at(item.config, "SRV-DEADLOCK") == ["node2/dp2"]
    assert failed_at(item.config, "SRV-SANITY") == []   # SANITY's item raised SRV-DEADLOCK's finding
    cause = blocked(item.config)
    assert isinstance(cause, NotRun) and cause.root == "SRV-DEADLOCK", cause
    assert "not run: SRV-DEADLOCK failed: requests hang at node2/dp2" in str(cause), str(cause)
    assert blocked(item.config, "SRV-DEADLOCK") is None   # its own items judge what they read
    # the rows that need SRV-SANITY are not run, naming SRV-DEADLOCK (the root cause)
    root = item.config.stash[order.ROW_OUTCOMES]["SRV-SANITY"][1]
    assert isinstance(root, NotRun) and root.root == "SRV-DEADLOCK"


def test_the_asking_rows_own_hang_finding_is_recorded_for_srv_deadlock_too():
    item = _Item("SRV-LONGCTX")
    _report(item, _raised(lambda: _hang("SRV-LONGCTX", own="")), outcome.FAILED)
    assert failed_at(item.config, "SRV-LONGCTX") == ["node2/dp2"]
    assert failed_at(item.config, "SRV-DEADLOCK") == ["node2/dp2"]
    cause = blocked(item.config)
    assert isinstance(cause, NotRun) and cause.root == "SRV-DEADLOCK", cause


def test_a_dead_rank_blocks_every_row_but_srv_alive_and_a_pass_records_nothing():
    item = _Item("SRV-ALIVE")
    _report(item, None, outcome.PASSED)
    assert blocked(item.config) is None
    _report(item, CheckFailed("SRV-ALIVE", "node3/dp9", "dp9 did not answer"), outcome.FAILED)
    cause = blocked(item.config, "SRV-SANITY")
    assert isinstance(cause, NotRun) and cause.root == "SRV-ALIVE" and "node3/dp9" in str(cause), cause
    assert blocked(item.config, "SRV-ALIVE") is None
