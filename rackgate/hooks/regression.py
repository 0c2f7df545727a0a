"""`-m regression`'s hooks: the baseline's sources marked `regression`, REG-FACTS parametrized by
fact name and run last, what ran noted, the comparison summarised. The `regression` fixture is
rackgate/fixtures/regression.py's."""
from __future__ import annotations

import pytest

from rackgate.baseline import compare as cmp
from rackgate.fixtures.baseline import FACTS, _is_worker, provenance
from rackgate.fixtures.rack import BUILT, RACK_FILE
from rackgate.fixtures.regression import STATE, _state

COMPARE_TEST = "test_facts_within_tolerance"


NO_BASELINE = "no-baseline"


GOLDEN_ROW = "SRV-GOLDEN"


def _mark_sources(config, items) -> None:
    st = _state(config)
    st.collected = {it.nodeid for it in items}
    sources = {f.source for f in st.baseline.facts.values() if f.source} if st.baseline else set()
    for it in items:
        if it.nodeid in sources:
            it.add_marker(pytest.mark.regression)
    # SRV-GOLDEN is in the gate and in -m regression when the baseline holds a golden set to compare
    # with (as a fact's check is in -m regression when the baseline holds its fact), and in the gate
    # while one is recorded; its row's own marker keeps it in -m serving, where none is an ERROR.
    has_golden = False
    if st.baseline is not None:
        from rackgate.baseline import golden  # its prompt set and the ATOM client's fan-out: with a baseline only
        has_golden = golden.KEY in st.baseline.sets
    if config.option.record_baseline or has_golden:
        for it in items:
            m = it.get_closest_marker("row")
            if m and m.args and m.args[0] == GOLDEN_ROW:
                it.add_marker(pytest.mark.gate)
                if has_golden:
                    it.add_marker(pytest.mark.regression)


_RAN: set[str] = set()


def pytest_generate_tests(metafunc):
    if "regression_fact" not in metafunc.fixturenames:
        return
    st = _state(metafunc.config)
    names = sorted({f.name for f in st.baseline.facts.values()}) if st.baseline else []
    metafunc.parametrize("regression_fact", names or [NO_BASELINE], ids=names or [NO_BASELINE])


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """Before the others (so -m regression selects them): mark the tests that recorded a fact of
    the baseline. After every other plugin ordered the items (rackgate/hooks/server.py orders the
    rows): the comparisons, which judge what the other checks recorded, move to the end."""
    if RACK_FILE in config.stash:
        _mark_sources(config, items)
    res = yield
    items.sort(key=lambda it: getattr(it, "originalname", it.name) == COMPARE_TEST)
    return res


def pytest_collection_finish(session):
    if STATE in session.config.stash:
        session.config.stash[STATE].selected = {it.nodeid for it in session.items}


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _RAN.add(report.nodeid)


def pytest_terminal_summary(terminalreporter, config):
    if STATE not in config.stash or _is_worker(config):
        return
    st = config.stash[STATE]
    moves = [m for ms in st.moves.values() for m in ms]
    if not moves and st.baseline is not None and config.pluginmanager.has_plugin("dsession"):
        # xdist controller: the workers' facts were merged here; compare them all for the table.
        ran = st.selected or _RAN
        old = {k: f for k, f in st.baseline.facts.items() if f.source in ran}
        if old:
            now = {f.key: f for f in config.stash[FACTS].all() if f.name in {o.name for o in old.values()}}
            moves = cmp.compare(old, now, config.stash[RACK_FILE].regression)
    if not moves:
        return
    bad = sum(1 for m in moves if not m.ok)
    rack = config.stash[BUILT].get("rack") or config.stash[RACK_FILE]
    terminalreporter.section(f"rackgate regression: baseline {st.baseline.describe()}", sep="-",
                             red=bool(bad), green=not bad)
    terminalreporter.write_line(cmp.header(st.baseline.provenance, provenance(config, rack, config.stash[FACTS].all())))
    terminalreporter.write_line(cmp.table(moves))
    terminalreporter.write_line(cmp.verdict(moves))
