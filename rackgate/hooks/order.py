"""The ordering's hooks, from catalogue data (`order`, `needs` in rackgate/catalogue/*.toml): the
session's items sorted by their row's `order` (stable), and a row whose needed row FAILED or could
not look ERRORs at once (NotRun pointing at the root cause) instead of running. A row's outcome is
the classifier's (rackgate/hooks/outcome.py), worst of its items; where a finding was raised is
recorded for the fixtures that read it (rackgate/fixtures/order.py `failed_at`)."""
from __future__ import annotations

import pytest

from rackgate.catalogue import UnknownRow, row
from rackgate.errors import NotRun
from rackgate.fixtures.order import FAILED_AT
from rackgate.hooks import outcome

# row id -> (its worst class, the NotRun when it was not run itself)
ROW_OUTCOMES = pytest.StashKey[dict[str, tuple[str, NotRun | None]]]()


def _row(item):
    rid = outcome.row_of(item)
    try:
        return row(rid) if rid else None
    except UnknownRow:
        return None  # rackgate/fixtures/labels.py reports the unknown id


def _record(config, exc) -> None:
    """A finding's rows (the one it names, and `also`) FAILED where it says. (`needs` reads the
    asking row's class: a row that needs it is not run naming the finding's row, `_other_row`.)"""
    found, where = getattr(exc, "row_id", None), getattr(exc, "where", "")
    if not found or not where:
        return
    for r in (found, *getattr(exc, "also", ())):
        config.stash.setdefault(FAILED_AT, {}).setdefault(r, []).append(where)


def _other_row(exc, rid: str) -> NotRun | None:
    """A check that FAILED on another row (SRV-SANITY saw a hang: SRV-DEADLOCK): its dependents
    are not run naming that row, not the asking one."""
    other = getattr(exc, "row_id", None)
    return NotRun(other, f"failed ({rid} saw it)") if other and other != rid else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The catalogue's order (stable: items of one order keep their place)."""
    def key(item):
        r = _row(item)
        return r.order if r else 0
    items[:] = sorted(items, key=key)


def pytest_configure(config):
    config.stash[ROW_OUTCOMES] = {}
    config.stash[FAILED_AT] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A row whose needed row already FAILED or could not look in this session: ERROR at once."""
    r = _row(item)
    if r is None or not r.needs:
        return
    seen = item.config.stash.get(ROW_OUTCOMES, {})
    for need in r.needs:
        cls, cause = seen.get(need, (outcome.PASSED, None))
        if isinstance(cause, NotRun):  # not run itself: point at the root cause
            raise NotRun(cause.root, cause.why)
        if cls == outcome.FAILED:
            raise NotRun(need, "failed")
        if cls != outcome.PASSED:
            raise NotRun(need, "could not look")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember each row's worst class for the rows that need it, and where each finding's row
    FAILED: the item's own row, or the row the finding names when it is another's (SRV-SANITY's
    item raised SRV-DEADLOCK's FAILED), and the rows it is the signature of too (`also`)."""
    report = yield
    rid = outcome.row_of(item)
    cls = outcome.of(report)
    if rid is not None and cls is not None:
        seen = item.config.stash.setdefault(ROW_OUTCOMES, {})
        exc = call.excinfo.value if call.excinfo is not None else None
        if cls == outcome.FAILED:
            _record(item.config, exc)
        if rid not in seen or outcome.worse(cls, seen[rid][0]):
            seen[rid] = (cls, exc if isinstance(exc, NotRun) else _other_row(exc, rid))
    return report
