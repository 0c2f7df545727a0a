"""Which node pairs ubench07 tests, and in which rounds.

Every node is tested against (at least) two peers, in triangles A-B, B-C, C-A: a bad tray then
fails all of its pairs while a bad peer fails only one. The nodes are taken three at a time; a
remainder of one or two nodes forms a triangle with the first nodes of the list. Pairs that
share a node must run one after the other (aggregate mode takes every GPU of both nodes), so
pairs are packed into rounds of disjoint pairs that run concurrently.
"""
from __future__ import annotations

Pair = tuple[str, str]


def triangles(nodes: list[str]) -> list[Pair]:
    """The pairs to test, in a stable order, without duplicates. (A, B): A exports, B imports."""
    if len(nodes) < 2:
        return []
    if len(nodes) == 2:
        return [(nodes[0], nodes[1])]
    groups = [nodes[i:i + 3] for i in range(0, len(nodes), 3)]
    if len(groups[-1]) < 3:
        rest = groups.pop()
        groups.append(rest + [n for n in nodes if n not in rest][:3 - len(rest)])
    out: list[Pair] = []
    seen: set[frozenset] = set()
    for a, b, c in groups:
        for p in ((a, b), (b, c), (c, a)):
            if frozenset(p) not in seen:
                seen.add(frozenset(p))
                out.append(p)
    return out


def rounds(pairs: list[Pair]) -> list[list[Pair]]:
    """Pack pairs into rounds in which no node appears twice (greedy, order kept)."""
    left = list(pairs)
    out: list[list[Pair]] = []
    while left:
        busy: set[str] = set()
        this: list[Pair] = []
        for p in list(left):
            if p[0] not in busy and p[1] not in busy:
                this.append(p)
                busy.update(p)
                left.remove(p)
        out.append(this)
    return out


def pair_id(p: Pair) -> str:
    return f"{p[0]}-{p[1]}"
