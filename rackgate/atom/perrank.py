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

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import CouldNotObserve, ServerBrokeLimit
from ..server_access import Ask, Fanned, Got, HangRule, Routing, Share, Spread
from .client import Client
from .fanout import fan_out, takes_rank_hint
from .mismatch import line, mismatch

__all__ = ["PerRank", "Routing", "Share", "Spread", "decide", "routing"]   # the values: rackgate.server_access


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
        return self._spread(out)

    def _spread(self, out: Fanned) -> Spread:
        """The answers as a Spread; an answer that broke its request's own limit (a stream past
        max_tokens, a body past the bound) raised as the evidence it is, naming its rank and node
        where the hint attributes it (the asking check's FAILED: rackgate/hooks/outcome.py)."""
        spread = Spread(out.got, out.asked, out.cancelled, out.seconds, out.hung, out.bound_s, out.slowest_s,
                        routing=self.routing, hang_rule=self.hang)
        refused = next(((g, kind) for g in spread.replied if g.error and (kind := mismatch(g.status, g.error))), None)
        if refused is not None:
            raise CouldNotObserve(line(refused[1], refused[0].error or "", f"{self.client.base_url} "
                                       f"({len(spread.replied)} of {spread.asked} answered)"))
        g = spread.broke()
        if g is not None and g.broke is not None:
            rank, table = g.ask.rank, self.routing.table
            where = f"dp{rank} on {table[rank]}" if rank is not None and rank in table else g.broke.where
            raise ServerBrokeLimit(where, f"{g.broke.seen} ({g.broke.where}; {len(spread.replied)} of {spread.asked} "
                                          "requests answered)")
        return spread

    def read(self, out: Fanned) -> Spread:
        """Requests a check sent its own way (the quick gate's paced questions) read as a Spread:
        the same hang, share and evidence as every check's."""
        return self._spread(out)

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
        return self._spread(out)
