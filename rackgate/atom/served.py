"""The server as a check receives it: one object over the session's server (rackgate.atom.server:
launched or attached, booted) and the one way requests reach its DP ranks (rackgate.atom.perrank),
with what a check reads of it besides answers: /health, a node's last log lines, a hung rank's
stacks, the ranks known dead, the head node's container. Built once per session by the server's life
(rackgate.atom.life.ServerLife: launch or attach, the xdist claim, stop); the declared "server" and
"rank" checks' probes read through it (rackgate/probes/served.py), and nothing a check learns is
written back into it: what one check tells the next is the ordering's (rackgate/hooks/order.py),
read here through `dead`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..access import NodeAccess
from ..config.model import Rack
from ..errors import CouldNotObserve, NotRun
from ..probes.runs import Runs, WithRuns
from ..server_access import Posted
from .client import Client, ServerError, refusal
from .logs import NodeLog
from .perrank import PerRank, Routing
from .server import AtomServer
from .stacks import hang_evidence
from .tokens import Tokens


def dead_rank(where: list[str]) -> NotRun:
    """The NotRun of a check that would ask a server one of whose DP ranks does not answer (SRV-ALIVE
    FAILED there): the router keeps sending that rank requests, which then hang."""
    return NotRun("SRV-ALIVE", f"failed: {', '.join(where)} does not answer")


@dataclass
class Served:
    server: AtomServer
    rack: Rack
    name_source: str                          # where the served name came from, as the user wrote it
    _make_per_rank: Callable[[], PerRank] = field(repr=False)
    dead: Callable[[], list[str]] = field(default=list, repr=False)  # where SRV-ALIVE FAILED so far (the ordering's)
    # the session's runs handed to the probes beside the server (rackgate/probes/runs.py Runs: the
    # recorded baseline, SRV-GOLDEN's prompt set, the GSM8K runs), made by the `served` fixture
    given_runs: Runs | None = field(default=None, repr=False)
    _per_rank: PerRank | None = field(default=None, repr=False)

    @property
    def runs(self) -> Runs:
        """The session's runs (a view made without them is a bug of the suite's: RuntimeError)."""
        if self.given_runs is None:
            raise RuntimeError("this server view was made without the session's runs")
        return self.given_runs

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def client(self) -> Client:
        return self.server.client

    @property
    def per_rank(self) -> PerRank:
        """Every rank asked, the hang rule, the run's routing (decided on first use)."""
        if self._per_rank is None:
            self._per_rank = self._make_per_rank()
        return self._per_rank

    @property
    def routing(self) -> Routing:
        return self.per_rank.routing

    @property
    def table(self) -> dict[int, str]:
        """DP rank -> node (empty: attached without a rack file)."""
        return self.routing.table

    def tokens(self) -> Tokens:
        """The served model's tokenizer on this machine (serving.tokenizer; rackgate.atom.tokens
        `Tokens`: `count`, `specials_in`): an answer's tokens counted the way the server counts them;
        CouldNotObserve when it cannot be loaded."""
        from .tokens import load
        return load(self.rack.serving.tokenizer)

    def post(self, path: str, timeout: float | None = None) -> Posted:
        """POST `path` with no body (/start_profile, /stop_profile): its status, body and evidence,
        and what a non-200 answer says."""
        reply = self.client.post(path) if timeout is None else self.client.post(path, timeout=timeout)
        return Posted(reply.status, reply.body, reply.evidence(), refusal(reply))

    def host(self, node: str) -> NodeAccess | None:
        """The node the server's ranks run on, as a probe reads it (None: its log is not known)."""
        logs = self.server.node_logs()
        return logs[node].host if node in logs else None

    def batched_tokens(self) -> tuple[int, str]:
        """The server's --max-num-batched-tokens (its prefill chunk) as the launch command sets it
        (ATOM's default when it does not), and where that came from."""
        from ..gates import lint
        cmd = self.server.command_for(self.rack.head, 0) if not self.server.attached else self.rack.launch.command
        raw = lint.flags(cmd).get("max-num-batched-tokens")
        if raw and raw.isdigit():
            return int(raw), f"--max-num-batched-tokens {raw}"
        return lint.ATOM_DEFAULT_BATCHED_TOKENS, f"--max-num-batched-tokens {lint.ATOM_DEFAULT_BATCHED_TOKENS}"

    def max_model_len(self) -> tuple[int | None, str]:
        """The model's length in tokens the server serves, and where that came from: the rack file's
        serving.max_model_len, the launch command's --max-model-len, the server's /v1/models entry for
        the served name (`max_model_len`: vLLM's model card; ATOM's has none), else (None, why not)."""
        from ..gates import lint
        if self.rack.serving.max_model_len:
            return self.rack.serving.max_model_len, "serving.max_model_len"
        cmd = self.server.command_for(self.rack.head, 0) if not self.server.attached else self.rack.launch.command
        raw = lint.flags(cmd).get("max-model-len") if cmd else None
        if raw and raw.isdigit():
            return int(raw), f"--max-model-len {raw}"
        from ..probes.fit import published_max_model_len
        try:
            reply = self.client.models()
            got = published_max_model_len(reply.body, self.client.model) if reply.status == 200 else None
        except CouldNotObserve:
            got = None
        if got is not None:
            return got, "the server's /v1/models max_model_len"
        return None, "not known (set serving.max_model_len: the server's /v1/models does not say it)"

    def grep(self, *patterns: str) -> list[str]:
        """Every node's server log lines with any of `patterns` ("node2/dp5 line 812: text"); could
        not observe where a node's log cannot be read."""
        return [f"{log.who(rec)} line {rec.lineno}: {rec.text.strip()[:160]}"
                for log in self.logs().values() for rec in log.grep(*patterns)]

    def health(self) -> str:
        """What GET /health answered, as a phrase."""
        try:
            return f"HTTP {self.client.request('GET', '/health', timeout=10).status}"
        except ServerError as e:
            return f"nothing ({e})"

    def log_tail(self, node: str, lines: int = 15) -> str:
        """The node's server log's last lines ('' when its log is not known)."""
        logs = self.server.node_logs()
        return logs[node].tail(lines) if node in logs else ""

    def stacks(self, ranks: list[int]) -> tuple[list[tuple[str, str]], str]:
        """The hung ranks' stacks and last log lines ([(title, text)], one line for the finding);
        nothing when the suite did not launch the server."""
        return hang_evidence(self.server, ranks, self.table)

    def dead_ranks(self) -> NotRun | None:
        """NotRun pointing at SRV-ALIVE once it FAILED on a rank in this session (the router keeps
        sending that rank requests, which then hang); None while every rank is known to answer."""
        where = self.dead()
        return dead_rank(where) if where else None

    def logs(self) -> Mapping[str, NodeLog]:
        """{node: its server log} (rackgate.atom.logs.NodeLog: grep, rank_of, who, tail), read on the
        node; could not observe where the rack file names nodes and no log of theirs is known."""
        logs = self.server.node_logs()
        if self.rack.nodes and not logs:
            raise CouldNotObserve("the server's logs on the nodes are not known to the suite: nothing to read")
        return logs

    def log_note(self) -> str:
        """Why the server's log format was not recognised at boot ('' recognised, or attached: not
        watched): a check that decides on what the ranks log cannot read them."""
        boot = self.server.boot
        return boot.format_note if boot is not None and boot.format_note else ""

    def head(self) -> NodeAccess:
        """The head node's container (where the rack file's benchmark runs); could not observe
        when the rack file names no nodes (attached without one)."""
        logs = self.server.node_logs()
        name = self.rack.head.name if self.rack.nodes else ""
        if name not in logs:
            raise CouldNotObserve(f"the head node ({name or 'none: the rack file names no nodes'}) cannot be reached "
                                  "to run the benchmark on")
        return logs[name].host


# Served is the ServerAccess the probes are handed, with the session's runs beside it (checked by mypy).
_ACCESS: Callable[[Served], WithRuns] = lambda s: s
