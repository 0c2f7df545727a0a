"""Which node pairs ubench07 tests, and in which rounds.

Every node is tested against (at least) two peers, in triangles A-B, B-C, C-A: a bad tray then
fails all of its pairs while a bad peer fails only one. The nodes are taken three at a time; a
remainder of one or two nodes forms a triangle with the first nodes of the list. Pairs that
share a node must run one after the other (aggregate mode takes every GPU of both nodes), so
pairs are packed into rounds of disjoint pairs that run concurrently.
"""
from __future__ import annotations

from ..probes.pair_runs import Pair, pair_id


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


# --- rack scale: a round-robin tournament (the triangles generalised) -------------------------
def tournament(nodes: list[str]) -> list[list[Pair]]:
    """Every pair of nodes exactly once, in rounds of disjoint pairs (the circle method: the
    first node stays, the others rotate; an odd count gets a bye each round). len(nodes)-1 rounds
    for an even count, len(nodes) for an odd one. The exporter alternates so each node exports
    about as often as it imports."""
    if len(nodes) < 2:
        return []
    ring: list[str | None] = list(nodes) + ([None] if len(nodes) % 2 else [])
    m = len(ring)
    out: list[list[Pair]] = []
    for r in range(m - 1):
        this: list[Pair] = []
        for i in range(m // 2):
            a, b = ring[i], ring[m - 1 - i]
            if a is None or b is None:
                continue
            this.append((a, b) if (r + i) % 2 == 0 else (b, a))
        out.append(this)
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return out


def min_rounds(n: int, peers: int = 2) -> int:
    """The fewest rounds in which each of n nodes meets `peers` distinct peers (capped at n-1)
    when a node is in at most one pair per round: at least `peers` rounds, and at least enough
    rounds of floor(n/2) pairs to hold the n*peers/2 pairs."""
    if n < 2:
        return 0
    k = min(peers, n - 1)
    return max(k, -(-(n * k) // (2 * (n // 2))))


def plan(nodes: list[str], peers: int = 2) -> list[list[Pair]]:
    """The fewest tournament rounds after which every node has been paired with `peers` distinct
    peers (2 as the runbook's triangles: a bad tray fails all its pairs, a bad peer one), no node
    in two pairs of a round. Every pair of a round runs at once."""
    want = min(peers, len(nodes) - 1)
    met: dict[str, set[str]] = {n: set() for n in nodes}
    out: list[list[Pair]] = []
    for rnd in tournament(nodes):
        if all(len(s) >= want for s in met.values()):
            break
        out.append(rnd)
        for a, b in rnd:
            met[a].add(b)
            met[b].add(a)
    return out


def estimate_s(rounds_: list[list[Pair]], fabric) -> float:
    """Upper bound of ubench07's wall time for a plan: each round runs p2p then bw, each side
    bounded by the rack file (ubench_ready_s + p2p_run_s, ubench_ready_s + bw_run_s)."""
    per_round = 2 * fabric.ubench_ready_s + fabric.p2p_run_s + fabric.bw_run_s
    return len(rounds_) * per_round


def describe_plan(rounds_: list[list[Pair]], fabric) -> str:
    pairs_n = sum(len(r) for r in rounds_)
    head = (f"ubench07 plan: {pairs_n} pairs in {len(rounds_)} rounds (no node in two pairs at once), "
            f"at most {estimate_s(rounds_, fabric):.0f}s (per round: p2p <= "
            f"{fabric.ubench_ready_s + fabric.p2p_run_s:g}s, bw <= {fabric.ubench_ready_s + fabric.bw_run_s:g}s)")
    return "\n".join([head] + [f"  round {i}: {', '.join(pair_id(p) for p in r)}" for i, r in enumerate(rounds_, 1)])
