"""The baseline's hooks: each test's facts stamped with its id, spooled by every xdist worker and
merged by the controller, and --record-baseline's file written once, atomically, with its provenance.
The `facts` and `baseline` fixtures and the shared stash keys are rackgate/fixtures/baseline.py's."""
from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import pytest

from rackgate import baseline as bl
from rackgate.fixtures.baseline import DONE, FACTS, SPOOL, _is_worker, _path, provenance

RECORDED = pytest.StashKey[str]()


WORKER_KEY = "rackgate_facts"


WORKER_SETS_KEY = "rackgate_fact_sets"  # the sets a worker kept (the golden set)


SPOOL_KEY = "rackgate_facts_spool"


def _spool(config) -> None:
    """This worker's facts and finished tests, atomically, for the comparison items."""
    d = config.stash.get(SPOOL, None)
    if d is None or not _is_worker(config):
        return
    p = d / f"{config.workerinput['workerid']}.json"
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps({"facts": [asdict(f) for f in config.stash[FACTS].all()],
                               "done": config.stash[DONE]}))
    tmp.replace(p)


def _serial_id(item: pytest.Item) -> str:
    """The test's id as a serial run names it: under `--dist loadgroup` xdist appends `@<group>`,
    and a baseline recorded with -n 2 must select its producers in a serial run too."""
    m = item.get_closest_marker("xdist_group")
    group = (m.args[0] if m.args else m.kwargs.get("name")) if m else None
    return item.nodeid.removesuffix(f"@{group}") if group else item.nodeid


def pytest_configure(config):
    config.stash[FACTS] = bl.Facts()
    config.stash[DONE] = []
    if _is_worker(config):
        spool = config.workerinput.get(SPOOL_KEY)
        if spool:
            config.stash[SPOOL] = Path(spool)
    elif getattr(config.option, "numprocesses", None) and not getattr(config.option, "collectonly", False):
        config.stash[SPOOL] = Path(tempfile.mkdtemp(prefix="rackgate-facts-"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist controller: tell each worker where to spool its facts."""
    spool = node.config.stash.get(SPOOL, None)
    if spool is not None:
        node.workerinput[SPOOL_KEY] = str(spool)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    # Facts recorded from setup to teardown (a session fixture set up here too) name this test.
    facts = item.config.stash.get(FACTS, None)
    if facts is not None:
        facts.source = _serial_id(item)
    try:
        return (yield)
    finally:
        if facts is not None:
            facts.source = ""
            item.config.stash[DONE].append(item.nodeid)
            try:
                _spool(item.config)
            except OSError:
                pass  # the comparison items then say which tests they could not see finish


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: a worker finished; take the facts it recorded."""
    raw = getattr(node, "workeroutput", {}).get(WORKER_KEY)
    if raw and FACTS in node.config.stash:
        node.config.stash[FACTS].merge([bl.Fact.from_dict(f) for f in json.loads(raw)])
    sets = getattr(node, "workeroutput", {}).get(WORKER_SETS_KEY)
    if sets and FACTS in node.config.stash:
        node.config.stash[FACTS].merge_sets(json.loads(sets))


def pytest_sessionfinish(session):
    config = session.config
    if FACTS not in config.stash:
        return
    facts = config.stash[FACTS]
    if _is_worker(config):
        config.workeroutput[WORKER_KEY] = json.dumps([asdict(f) for f in facts.all()])
        config.workeroutput[WORKER_SETS_KEY] = json.dumps(facts.sets())
        return
    if not config.option.record_baseline:
        return
    from rackgate.fixtures.rack import BUILT, RACK_FILE
    if RACK_FILE not in config.stash:
        return
    rack = config.stash[BUILT].get("rack") or config.stash[RACK_FILE]  # never build a sim just for this
    sets = facts.sets()
    if not len(facts) and not sets:
        config.stash[RECORDED] = "rackgate: --record-baseline: no check recorded a fact; no baseline written"
        return
    path, how = bl.write(_path(config, rack, for_writing=True), facts.all(), provenance(config, rack, facts.all()),
                         merge=True, sets=sets)
    also = " and the golden set (SRV-GOLDEN)" if sets else ""
    config.stash[RECORDED] = f"rackgate: recorded {len(facts)} facts{also} as the baseline in {path} ({how})"


def pytest_unconfigure(config):
    d = config.stash.get(SPOOL, None)
    if d is not None and not _is_worker(config):
        shutil.rmtree(d, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, config):
    if RECORDED in config.stash:
        terminalreporter.write_line(config.stash[RECORDED])
