"""PLAT-ATOM-COMMIT: the ATOM commit the image holds (git HEAD of atom_path in the container),
the same on every node, recorded as platform.atom.commit for the regression comparison."""
import pytest

from rackgate.errors import CouldNotObserve
from rackgate.probes import atom_commit
from rackgate.report.verdict import check
from rackgate.transport import container_for, fanout


@pytest.mark.row("PLAT-ATOM-COMMIT")
def test_atom_commit(rack, hosts, evidence, facts):
    if not rack.atom_path:
        raise CouldNotObserve("the rack file sets no atom_path: no ATOM tree to read the commit of")
    names = list(hosts)
    got = fanout(names, lambda n: atom_commit.read(container_for(hosts[n], rack.node(n), rack), rack.atom_path))
    commits, unread = {}, []
    for name, g in zip(names, got):
        if isinstance(g, CouldNotObserve):
            unread.append(str(g))
            continue
        if isinstance(g, Exception):
            raise g
        commits[name], ev = g
        evidence.attach(f"ATOM commit on {name}", ev)
        facts.record("platform.atom.commit", commits[name], where=name, row="PLAT-ATOM-COMMIT")
    by_commit: dict[str, list[str]] = {}
    for name, c in commits.items():
        by_commit.setdefault(c, []).append(name)
    check(len(by_commit) <= 1, "PLAT-ATOM-COMMIT", "all nodes",
          "the nodes' ATOM trees are at different commits: "
          + "; ".join(f"{c} on {', '.join(ns)}" for c, ns in sorted(by_commit.items(), key=lambda kv: -len(kv[1]))))
    if unread:
        raise CouldNotObserve("ATOM commit: " + "; ".join(unread))
    hosts.require_all("ATOM commit")
