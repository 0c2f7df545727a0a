"""Every rank, every request: the one way a check sends requests to the server.

A check asks `PerRank.ask(prompts, ...)` (the `per_rank` fixture gives it one) and gets a `Spread`:
every DP rank asked (ATOM's `data_parallel_rank` hint, `per_rank` requests each, when the rack
file names the ranks; attached without one, `attached` requests spread by the server), all at
once (rackgate.atom.fanout), with the hang rule. The Spread reads itself:

- `hang()`: some requests came back and others stayed in flight past the bound -- a finding
  (SRV-DEADLOCK's), never could-not-observe; `nothing_back()`: could not observe;
- `share(why, noun)`: "k of n <noun>" for the answers a judge calls bad, with the ranks and nodes
  they came from where the hint attributes them.

Whether the server takes the hint is decided once per run (`routing`, cached on the server): a
server that refuses the field (a 4xx naming it: transformers serve's 422) gets its requests
spread without it, and every check says so; the refusal is never a finding about the rack.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .client import Client
from .fanout import Ask, Fanned, Got, HangRule, fan_out, takes_rank_hint


@dataclass(frozen=True)
class Routing:
    table: dict[int, str]  # DP rank -> node (empty: attached without a rack file)
    hinted: bool           # requests name their rank
    note: str = ""         # why not, when the rack names ranks and the hint is not used

    def targets(self, per_rank: int, attached: int) -> list[int | None]:
        """The rank of each request (None: the server picks)."""
        if not self.table:
            return [None] * attached
        ranks = [r for r in self.table for _ in range(per_rank)]
        return list(ranks) if self.hinted else [None] * len(ranks)

    def describe(self) -> str:
        if not self.table:
            return "attached without a rack file: the DP ranks are not known; requests spread by the server"
        if self.hinted:
            return f"{len(self.table)} DP ranks, each asked by ATOM's data_parallel_rank hint"
        return f"{len(self.table)} DP ranks; {self.note}"


def decide(client: Client, table: dict[int, str], timeout: float) -> Routing:
    if not table:
        return Routing({}, False)
    hinted, why = takes_rank_hint(client, len(table), timeout)
    return Routing(dict(table), hinted, why)


def routing(server: Any, table: dict[int, str], timeout: float) -> Routing:
    """The run's routing, decided on the first ask and kept on the server object."""
    r = getattr(server, "routing", None)
    if r is None:
        r = decide(server.client, table, timeout)
        server.routing = r
    return r


def _where(ranks: Sequence[int], table: dict[int, str]) -> str:
    """'node2' when those are all of a node's ranks, else 'node3/dp9' (node by node)."""
    parts = []
    for node in dict.fromkeys(table[r] for r in sorted(ranks)):
        mine = [r for r in table if table[r] == node]
        bad = sorted({r for r in ranks if table[r] == node})
        parts.append(node if bad == mine and len(mine) > 1 else f"{node}/" + ",".join(f"dp{r}" for r in bad))
    return ", ".join(parts)


@dataclass(frozen=True)
class Share:
    bad: list[Got]
    n: int
    line: str    # "k of n ... " with the ranks and nodes
    where: str   # the node/ranks to blame, '' when not attributable or everything


@dataclass
class Spread(Fanned):
    routing: Routing = field(default_factory=lambda: Routing({}, False))
    hang_rule: HangRule = field(default_factory=HangRule)

    def _ranks_of(self, asks: Sequence[Ask]) -> list[int]:
        return [a.rank for a in asks if a.rank is not None]

    def hang(self) -> str | None:
        """The hang as seen (None: none): k of n still in flight after X s while n-k came back."""
        if not self.hung:
            return None
        k, n = len(self.hung), self.asked
        out_s = self.bound_s or self.seconds
        ranks = self._ranks_of(self.hung)
        table = self.routing.table
        line = (f"{k} of {n} requests still in flight after {out_s:.1f}s while {len(self.replied)} came back within "
                f"{self.slowest_s:.1f}s (the slowest); the bound is max({self.hang_rule.floor_s:g}s, "
                f"{self.hang_rule.factor:g} x the slowest answer back) (serving.hang_floor_s, serving.hang_factor)")
        if ranks and table:
            answering = sorted({g.ask.rank for g in self.replied if g.ask.rank is not None})
            nodes = {table[r] for r in ranks}
            whole = all(all(r in ranks for r in table if table[r] == nd) for nd in nodes)
            who = "every rank of the node does not answer" if whole and len(set(ranks)) > 1 else \
                f"{'one rank does' if len(set(ranks)) == 1 else 'some ranks do'} not answer"
            return (f"{line}; the requests in flight were routed to {_where(ranks, table)} ({who}); "
                    f"dp{', dp'.join(str(r) for r in answering)} answered" if answering else f"{line}; {who}")
        return (f"{line}; which rank holds them is not known ({self.routing.describe()}): a rank or a node "
                "does not answer")

    def hang_where(self, fallback: str) -> str:
        ranks = self._ranks_of(self.hung)
        return _where(ranks, self.routing.table) if ranks and self.routing.table else fallback

    def hung_ranks(self) -> list[int]:
        return sorted(set(self._ranks_of(self.hung)))

    def nothing_back(self) -> str | None:
        """Why nothing can be read (None: something came back)."""
        if self.replied:
            return None
        first = next((g.error for g in self.got if g.error), "no answer within the request timeout")
        return f"none of {self.asked} requests came back ({self.routing.describe()}): {first}"

    def share(self, why: Callable[[Got], str | None], noun: str) -> Share | None:
        """The answers back that `why` calls bad (None: none), as 'k of n <noun>: <why>', with the
        ranks and nodes they came from and the share that was fine."""
        back = self.replied
        bad = [g for g in back if why(g)]
        if not bad:
            return None
        n, k = len(back), len(bad)
        table = self.routing.table
        head = f"{k} of {n} {noun}" + (f" ({self.asked - n} more not back)" if n < self.asked else "")
        example = f"; e.g. {bad[0].ask.prompt[:40]!r} -> {why(bad[0])}"
        if k == n:
            return Share(bad, n, head + example + "; every answer: a cause common to the whole server", "")
        ranks = self._ranks_of([g.ask for g in bad])
        if ranks and table:
            good = sorted({g.ask.rank for g in back if g not in bad and g.ask.rank is not None} - set(ranks))
            where = _where(ranks, table)
            return Share(bad, n, head + example + f"; from {where}; the other {n - k} fine"
                         + (f" (dp{', dp'.join(map(str, good))})" if good else "")
                         + "; a node- or rank-specific cause: one rank of n serves that share of all traffic", where)
        return Share(bad, n, head + example + f"; the other {n - k} fine; which rank served which is not known "
                     f"({self.routing.describe()}): a rank- or node-specific cause", "")

    def failed(self) -> Share | None:
        """The requests that came back with an error (an HTTP error, a broken stream) while others
        were answered: a finding about those ranks (None: none, or every one failed)."""
        return self.share(lambda g: g.error, "requests answered with an error")

    def evidence(self) -> str:
        return (f"{self.routing.describe()}\n{self.asked} asked, {len(self.replied)} answered, {len(self.hung)} hung, "
                f"{self.cancelled} cancelled, {self.seconds:.1f}s (slowest answer {self.slowest_s:.1f}s)\n"
                + "\n".join(f"dp{g.ask.rank if g.ask.rank is not None else '?'}\t{g.seconds:.1f}s\t{g.ask.prompt[:48]!r}"
                            f"\t{g.error or repr(g.text[:80])}\tfinish={g.finish}"
                            + (f"\treasoning={len(g.reasoning)} chars" if g.reasoning else "")
                            + (f"\tstopped: {g.stopped}" if g.stopped else "") for g in self.got)
                + "".join(f"\ndp{a.rank if a.rank is not None else '?'}\thung\t{a.prompt[:48]!r}" for a in self.hung))


@dataclass
class PerRank:
    """What a check asks for (the `per_rank` fixture): the server's client, the run's routing and
    the hang rule. `ask` is the one way a request-sending check reaches every rank."""
    client: Client
    routing: Routing
    hang: HangRule
    timeout: float

    def ask(self, prompts: Sequence[str], max_tokens: int, *, per_rank: int = 1, attached: int = 16,
            chat: bool = False, stream: bool = True, stop_when: Callable[[str], str | None] | None = None,
            decisive: Callable[[Got], bool] = lambda g: False, settle_s: float = 2.0,
            extra: dict[str, Any] | None = None, stop: Callable[[], bool] | None = None,
            timeout: float | None = None, at_least: int = 0) -> Spread:
        """Every rank `per_rank` times (prompts in turn), or `attached` requests spread by the
        server when the ranks are not known; at least `at_least` requests (the ranks in turn)."""
        targets = self.routing.targets(per_rank, attached)
        while targets and len(targets) < at_least:
            targets += targets[:at_least - len(targets)]
        asks = [Ask(prompts[i % len(prompts)], r, chat) for i, r in enumerate(targets)]
        out = fan_out(self.client, asks, max_tokens, timeout or self.timeout, stop_when, decisive, settle_s,
                      hang=self.hang, stream=stream, extra=extra, stop=stop)
        return Spread(out.got, out.asked, out.cancelled, out.seconds, out.hung, out.bound_s, out.slowest_s,
                      routing=self.routing, hang_rule=self.hang)

    def read(self, out: Fanned) -> Spread:
        """Requests a check sent its own way (the quick gate's paced questions) read as a Spread:
        the same hang, share and evidence as every check's."""
        return Spread(out.got, out.asked, out.cancelled, out.seconds, out.hung, out.bound_s, out.slowest_s,
                      routing=self.routing, hang_rule=self.hang)

    def rank_of(self, i: int) -> int | None:
        """The rank the i-th request of a check's own goes to (ranks in turn; None: the server picks)."""
        ranks = list(self.routing.table) if self.routing.hinted else []
        return ranks[i % len(ranks)] if ranks else None

    def each(self, prompts: Sequence[str], max_tokens: int, **kw: Any) -> Spread:
        """Each prompt asked once, all at once, the server picking the rank (SRV-SANITY's logprob
        reads: what the server says of the prompt, not of one rank)."""
        return self.asks([Ask(p) for p in prompts], max_tokens, **kw)

    def on(self, asks: Sequence[tuple[str, int | None] | tuple[str, int | None, tuple[tuple[str, Any], ...]]],
           max_tokens: int, **kw: Any) -> Spread:
        """(prompt, rank) pairs, each asked of its rank, all at once (SRV-CONSISTENCY's prefills on
        the rank that decoded): `asks` for a caller that does not build `Ask`s. A third element is
        the request's own fields (`Ask.params`: SRV-BATCH's sampled requests)."""
        return self.asks([Ask(a[0], a[1], params=a[2] if len(a) > 2 else ()) for a in asks],
                         max_tokens, **kw)

    def asks(self, asks: list[Ask], max_tokens: int, **kw: Any) -> Spread:
        """Asks built by the caller (each names its own rank: e.g. a prefill on the rank that decoded)."""
        timeout = kw.pop("timeout", None) or self.timeout
        out = fan_out(self.client, asks, max_tokens, timeout, hang=self.hang, **kw)
        return Spread(out.got, out.asked, out.cancelled, out.seconds, out.hung, out.bound_s, out.slowest_s,
                      routing=self.routing, hang_rule=self.hang)
