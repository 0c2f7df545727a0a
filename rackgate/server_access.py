"""How a probe reaches the session's server: the interface it is handed (`ServerAccess`, as
rackgate.access's `NodeAccess` is for a node; rackgate.atom.served `Served` implements it) and the
values a request to every DP rank gives back (`Spread` of `Got`s, with the hang rule and the
run's `Routing`; `Posted`), typed end to end: a probe names these only, never rackgate.atom (the
layers contract), and nothing in the interface is `Any` (a reply's JSON body and a request's
extra JSON fields are `dict[str, Any]`: JSON). The fan-out itself (threads, HTTP, the
client) is rackgate.atom.fanout's and perrank's; the values are plain data that read themselves
(`Spread.hang()`, `share()`, `evidence()`), so a judge may read them too.

The session's runs (the recorded baseline, SRV-GOLDEN's prompt set, the GSM8K runs) are not the
server's: a probe that reads one gets them as an input of their own beside the server
(rackgate/probes/runs.py `Runs`, `WithRuns.runs`), never looked up through this interface by name.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from .access import NodeAccess
from .config.model import Rack
from .errors import NotRun, ServerBrokeLimit


# --- a request to every rank, as it came back (rackgate.atom.fanout sends them) ----------------
@dataclass(frozen=True)
class Ask:
    prompt: str
    rank: int | None = None  # ATOM's data_parallel_rank hint (None: the server picks)
    chat: bool = False       # asked as one user message on /v1/chat/completions
    params: tuple[tuple[str, Any], ...] = ()  # this request's own fields over the fan-out's (sampling, max_tokens)


@dataclass
class Got:
    ask: Ask
    text: str = ""               # the completion's text, or the chat answer's content
    finish: str | None = None
    stopped: str | None = None   # stop_when's reason: the stream was cut there
    error: str | None = None     # the request failed or was refused (what came back)
    status: int = 200
    seconds: float = 0.0
    replied: bool = False        # an HTTP answer came back (any status): the server answered it
    reasoning: str = ""          # a chat answer's reasoning_content
    tokens: int | None = None    # usage.completion_tokens (streamed: the chunks read)
    body: dict[str, Any] = field(default_factory=dict)  # the reply as read (non-streamed: the server's)
    broke: ServerBrokeLimit | None = None  # the answer broke the request's own limit (read stopped there)


@dataclass(frozen=True)
class HangRule:
    """Requests still in flight after max(floor_s, factor x the slowest answer back) are hung
    (serving.hang_floor_s, serving.hang_factor in the rack file)."""
    floor_s: float = 30.0
    factor: float = 10.0

    def bound(self, slowest_s: float) -> float:
        return max(self.floor_s, self.factor * slowest_s)


@dataclass
class Fanned:
    got: list[Got]       # the answers back, in the order asked
    asked: int
    cancelled: int       # requests still out when the read ended (cancelled), hung ones included
    seconds: float
    hung: list[Ask] = field(default_factory=list)  # still in flight past the hang bound while others came back
    bound_s: float | None = None                   # the hang bound the read ended on (None: no hang)
    slowest_s: float = 0.0                         # the slowest answer that came back

    @property
    def replied(self) -> list[Got]:
        return [g for g in self.got if g.replied]


# --- how the requests were routed, and what the answers say together (rackgate.atom.perrank) -----

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

    def broke(self) -> Got | None:
        """The first answer that broke its request's own limit (a stream past max_tokens, a body
        larger than any answer could be): positive evidence about the server (None: none did)."""
        return next((g for g in self.got if g.broke is not None), None)

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


@dataclass(frozen=True)
class Posted:
    """A POST's answer as a probe reads it."""
    status: int
    body: dict[str, Any]
    evidence: str
    refusal: str          # HTTP <status>: what it said (client.refusal)


# --- the interface a "server" or "rank" probe is handed ------------------------------------------
class PerRankAccess(Protocol):
    """Every DP rank asked at once, under the hang rule (rackgate.atom.perrank.PerRank)."""
    @property
    def routing(self) -> Routing: ...
    def ask(self, prompts: Sequence[str], max_tokens: int, *, per_rank: int = 1, attached: int = 16,
            at_least: int = 0, chat: bool = False, stream: bool = True, timeout: float | None = None,
            stop_when: Callable[[str], str | None] | None = None, decisive: Callable[[Got], bool] = ...,
            settle_s: float = 2.0, extra: dict[str, Any] | None = None,
            stop: Callable[[], bool] | None = None) -> Spread: ...
    def each(self, prompts: Sequence[str], max_tokens: int, *, stream: bool = True,
             extra: dict[str, Any] | None = None) -> Spread: ...
    def on(self, asks: Sequence[tuple[str, int | None]], max_tokens: int, *, stream: bool = True,
           extra: dict[str, Any] | None = None) -> Spread: ...
    def asks(self, asks: list[Ask], max_tokens: int, *, stream: bool = True) -> Spread: ...


class Answered(Protocol):
    """An HTTP answer as evidence (rackgate.atom.client.Reply)."""
    def evidence(self) -> str: ...


class ModelsClient(Protocol):
    """What a probe reads of the server's client: the served name it asks for, /v1/models."""
    @property
    def model(self) -> str: ...
    def models(self) -> Answered: ...
    def model_ids(self) -> list[str]: ...


class Tokens(Protocol):
    """The served model's tokenizer on this machine (rackgate.atom.tokens.Tokens)."""
    def count(self, text: str) -> int: ...
    def specials_in(self, text: str) -> list[tuple[int, str]]: ...


class LogLine(Protocol):
    """One line of a node's server log (rackgate.atom.logformat.Record)."""
    @property
    def lineno(self) -> int: ...
    @property
    def text(self) -> str: ...   # the message
    @property
    def raw(self) -> str: ...    # the line as written
    @property
    def process(self) -> str: ...   # processName from an ATOM_LOG_MORE header ('' when none)
    @property
    def pid(self) -> int | None: ...


class ServerLog(Protocol):
    """A node's server log, read on the node (rackgate.atom.logs.NodeLog)."""
    @property
    def node(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def ranks(self) -> range: ...   # the DP ranks the node runs
    def exists(self) -> bool: ...
    def grep(self, *patterns: str) -> Sequence[LogLine]: ...   # the lines matching any pattern, in log order
    def count(self, pattern: str) -> int: ...
    def tail(self, lines: int = 20) -> str: ...
    def rank_of(self, rec: LogLine) -> int | None: ...   # the DP rank that wrote a line (None: not labelled)
    def who(self, rec: LogLine) -> str: ...              # "node2/dp5" (or the node), for a line


class ServerAccess(Protocol):
    """The session's server as a "server"/"rank" probe reads it (rackgate.atom.served.Served)."""
    @property
    def rack(self) -> Rack: ...
    @property
    def name_source(self) -> str: ...          # where the served name came from, as the user wrote it
    @property
    def url(self) -> str: ...
    @property
    def client(self) -> ModelsClient: ...
    @property
    def per_rank(self) -> PerRankAccess: ...
    @property
    def table(self) -> dict[int, str]: ...       # DP rank -> node (empty: attached without a rack file)
    def health(self) -> str: ...
    def tokens(self) -> Tokens: ...
    def post(self, path: str, timeout: float | None = None) -> Posted: ...
    def host(self, node: str) -> NodeAccess | None: ...
    def batched_tokens(self) -> tuple[int, str]: ...
    def max_model_len(self) -> tuple[int | None, str]: ...
    def grep(self, *patterns: str) -> list[str]: ...
    def log_tail(self, node: str, lines: int = 15) -> str: ...
    def stacks(self, ranks: list[int]) -> tuple[list[tuple[str, str]], str]: ...
    def dead_ranks(self) -> NotRun | None: ...  # pointing at SRV-ALIVE once it FAILED on a rank
    def head(self) -> NodeAccess: ...           # the head node's container (the benchmark runs there)
    def logs(self) -> Mapping[str, ServerLog]: ...  # {node: its server log}
    def log_note(self) -> str: ...              # why the log format was not recognised at boot ('' when it was)
