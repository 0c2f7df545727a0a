"""PLAT-ATOM-COMMIT: the ATOM commit the image holds (git HEAD of atom_path in the container),
the same as on the rack's other nodes; recorded as platform.atom.commit for the regression
comparison. Every node is read once, at once (a module fixture); each node's item judges its own."""
from collections import Counter

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.probes import atom_commit
from rackgate.report.verdict import check
from rackgate.transport import container_for, fanout


@pytest.fixture(scope="module")
def atom_commits(rack, hosts) -> dict[str, tuple[str, str] | Exception]:
    """{node: (commit, evidence) or the CouldNotObserve that says why not} for the nodes that answer."""
    if not rack.atom_path:
        return {}
    names = list(hosts)
    got = fanout(names, lambda n: atom_commit.read(container_for(hosts[n], rack.node(n), rack), rack.atom_path))
    for g in got:
        if isinstance(g, Exception) and not isinstance(g, CouldNotObserve):
            raise g
    return dict(zip(names, got))


@pytest.mark.row("PLAT-ATOM-COMMIT")
def test_atom_commit(node, rack, atom_commits, evidence, facts):
    if not rack.atom_path:
        raise CouldNotObserve(f"{node.name}: the rack file sets no atom_path: no ATOM tree to read the commit of")
    got = atom_commits[node.name]
    if isinstance(got, Exception):
        raise got
    mine, ev = got
    evidence.attach("ATOM commit (in the container)", ev)
    facts.record("platform.atom.commit", mine, where=node.name, row="PLAT-ATOM-COMMIT")
    held = Counter(g[0] for g in atom_commits.values() if not isinstance(g, Exception))
    top = held.most_common()
    majority = top[0][0] if len(top) == 1 or top[0][1] > top[1][1] else None  # None: a tie, no majority
    alone = len(top) > 1 and majority != mine
    others = ", ".join(f"{c} on {', '.join(n for n, g in atom_commits.items() if not isinstance(g, Exception) and g[0] == c)}"
                       for c, _ in top if c != mine)
    check(not alone, "PLAT-ATOM-COMMIT", node.name,
          f"{node.name}'s ATOM tree is at {mine}; the other nodes' at {others}")
