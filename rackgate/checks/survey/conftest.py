"""The survey runs only when asked for (`pytest -m survey`): its checks carry their rows' markers
(platform, fabric) but answer another question (which trays can I use), so a plain `pytest` or
`-m platform` run leaves them out."""
from __future__ import annotations

import os
import threading

import pytest

from rackgate.fixtures.rack import get_rack
from rackgate.survey import pick, run
from rackgate.survey.model import TrayReport


def pytest_collection_modifyitems(config, items):
    if "survey" in (config.option.markexpr or ""):
        return
    here = os.path.dirname(__file__)
    keep = [it for it in items if not str(it.fspath).startswith(here + os.sep)]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[it for it in items if it not in keep])
        items[:] = keep


def pytest_generate_tests(metafunc):
    if "tray" in metafunc.fixturenames:
        nodes = get_rack(metafunc.config).nodes
        metafunc.parametrize("tray", nodes, ids=[n.name for n in nodes])


_LOCK = threading.Lock()
_DONE: dict[str, dict[str, TrayReport]] = {}  # "reports": {node: its tray's report}, once surveyed


def survey_of(config: pytest.Config) -> dict[str, TrayReport]:
    """The whole rack surveyed once per session (every tray in parallel)."""
    with _LOCK:
        if "reports" not in _DONE:
            rack = get_rack(config)
            _DONE["reports"] = {r.node: r for r in run.survey(rack)}
        return _DONE["reports"]


@pytest.fixture(scope="session")
def survey(pytestconfig):
    return survey_of(pytestconfig)


@pytest.fixture(scope="session")
def pick_n() -> int:
    """How many trays the set needs (the runbook's dp16/ep16: 4); RACKGATE_SURVEY_PICK overrides."""
    return int(os.environ.get("RACKGATE_SURVEY_PICK", "4"))


@pytest.fixture(scope="session")
def proposal(survey, pick_n):
    return pick.propose(list(survey.values()), pick_n)
