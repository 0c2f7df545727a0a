"""The bracket's hooks: which stages' boundaries need a snapshot (from the collected rows), the
snapshot taken before an item of a new stage, the snapshots taken in the summary. The Bracket and the checks'
way to it (of_session) are rackgate/fixtures/bracket.py's."""
from __future__ import annotations

from typing import Any

import pytest

from rackgate.catalogue import Row, UnknownRow, row
from rackgate.fixtures.bracket import BRACKET, JUDGED_BY, WANTED, _bracket


def _row(item: pytest.Item) -> Row | None:
    m = item.get_closest_marker("row")
    try:
        return row(m.args[0]) if m and m.args else None
    except UnknownRow:
        return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Which stages the selected rows judge, and (stage, node) -> the judging item: a snapshot's
    commands are sent for it (a failed read is that item's could-not-observe)."""
    judges: dict[tuple[str, str], str] = {}
    judged_by: set[tuple[str, str]] = set()
    for it in items:
        r = _row(it)
        node = getattr(getattr(it, "place", None), "id", "") or getattr(getattr(it, "callspec", None), "id", "")
        for s in r.brackets if r is not None else ():
            judges.setdefault((s, node), it.nodeid)
            judged_by.add((s, r.id))  # type: ignore[union-attr]
    config.stash[WANTED] = judges
    config.stash[JUDGED_BY] = judged_by


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    r = _row(item)
    if r is None or r.brackets or not r.stage:
        return
    b = _bracket(item.config)
    if b is not None:
        b.enter(r.stage)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    b = config.stash.get(BRACKET, None)
    if b is not None and b.snapshots:
        terminalreporter.write_line(f"hardware error bracket: {b.snapshots // max(len(b.nodes), 1)} snapshots of "
                                    f"{len(b.nodes)} nodes in {b.seconds:.1f}s")
