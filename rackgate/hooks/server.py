"""The server's hooks: per-rank parametrization, the server's items kept in one xdist group (one
process holds the server; reports keep the items' own ids), the server log's note in the summary. The server's fixtures
(`server_life` and its views) are rackgate/fixtures/server.py's."""
from __future__ import annotations

import pytest

from rackgate.fixtures.server import LOG_NOTE

SERVER_FIXTURES = {"server_life", "atom_server", "booted", "served", "serving", "server", "client", "server_logs"}


XDIST_GROUP = "atom-server"


def _dist_given(args) -> bool:
    return any(a in ("--dist", "-d", "--distload") or a.startswith("--dist=") for a in args)


_SUFFIX = "@" + XDIST_GROUP


_WORKER = [False]


def pytest_generate_tests(metafunc):
    """`dp_rank`: one test item per DP rank, named for its node (node3-dp9); without a rack file none
    (SKIPPED), or the server's one item (`[server]`) of a check declared with unranked=True."""
    if "dp_rank" not in metafunc.fixturenames:
        return
    from rackgate.atom.logs import rank_table
    from rackgate.fixtures.rack import get_rack
    table = rank_table(get_rack(metafunc.config))
    if not table and getattr(metafunc.function, "unranked", False):
        # a "rank" check that also judges a server whose ranks are not known: its one item
        from rackgate.probes.served import UNRANKED
        metafunc.parametrize("dp_rank", [UNRANKED], ids=["server"])
        return
    if not table:  # the attach profile: no rack file, no nodes, so no DP ranks to name
        why = "attached (--atom-url) without a rack file: no nodes, so the DP ranks are not known"
        metafunc.parametrize("dp_rank", [pytest.param(None, marks=pytest.mark.skip(reason=why))], ids=["no-ranks"])
        return
    metafunc.parametrize("dp_rank", list(table), ids=[f"{n}-dp{r}" for r, n in table.items()])


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # A worker is known by its workerinput, never by the environment: a run started from inside
    # another xdist run (a self-test's suite run) inherits PYTEST_XDIST_WORKER and is no worker.
    _WORKER[0] = hasattr(config, "workerinput")
    if getattr(config.option, "dist", "no") == "load" and not _dist_given(config.invocation_params.args):
        config.option.dist = "loadgroup"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["rackgate_loadgroup"] = node.config.getvalue("dist") == "loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """xdist: the items that use the server in one group (one worker); on a worker, marked before
    xdist reads the groups, and told by the controller whether groups count."""
    wi = getattr(config, "workerinput", None)
    if wi is None and not config.pluginmanager.hasplugin("xdist"):
        return
    if wi is not None and wi.get("rackgate_loadgroup"):
        config.option.loadgroup = True
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group(XDIST_GROUP))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    """xdist appends '@<group>' to a grouped test's id; reports (terminal, JUnit) keep the test's
    own id, so a run with -n names its tests as a serial run does (on the controller: a worker
    matches reports to its items by id)."""
    if not _WORKER[0] and report.nodeid.endswith(_SUFFIX):
        report.nodeid = report.nodeid[:-len(_SUFFIX)]


def pytest_terminal_summary(terminalreporter, config):
    """The server log's format, when the log-reading checks could not read it (SRV-BOOT's note)."""
    note = config.stash.get(LOG_NOTE, "")
    if note:
        terminalreporter.write_line(f"rackgate: server log: {note}")
