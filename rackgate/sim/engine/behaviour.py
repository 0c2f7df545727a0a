"""What the server's faults make the sim server do, as data the ranks and routes consult.

The sim state's server section names them (rackgate/sim/faults/srv.py declares which fault sets
which): `faults` lists behaviours of the model's output, `rank_faults` behaviours of some DP
ranks with their parameters. `ServerFaults.from_server` reads both into typed fields, and a
name it does not know is an error (a fault the server would silently ignore).
"""
from __future__ import annotations

from dataclasses import dataclass


class UnknownBehaviour(ValueError):
    pass


# The model's output (rackgate/sim/model.py and gsm8k.py consult these by name).
OUTPUT = frozenset({"bang-tokens", "empty-content", "decode-mismatch", "answer-format", "fake-eplb",
                    # the streaming path and the token accounting (routes.py)
                    "stream-drop-first", "stream-repeat-first", "usage-over",
                    "shorter-answers", "batch-numerics",  # chat reasons half as long (routes.py)
                    # a chat answer that is all reasoning: the budget runs out inside it (length), or
                    # the answer itself lands in reasoning_content (stop) -- /v1/completions unchanged
                    "reasoning-only-length", "reasoning-only-stop",
                    "logit-drift",  # every logprob slightly off, a later near-tie flipped (model.py)
                    # a greedy answer's token flipped early (model.py): what a rank returns for a request
                    # its batch or its cache corrupted (ranks.py Rank.corrupt)
                    "batch-flip",
                    "fragment-loop",  # every answer one fragment looped: BlockBlockBlock... (model.py)
                    "context-corrupt"})  # a long prompt's answer corrupted: its digits off (ranks.py Rank.corrupt)


@dataclass(frozen=True)
class Ranks:
    """The DP ranks a behaviour hits (all of them when `ranks` is None)."""
    ranks: tuple[int, ...] | None = None

    def hits(self, rank: int) -> bool:
        return self.ranks is None or rank in self.ranks


@dataclass(frozen=True)
class RackBusy(Ranks):
    """Someone else's weights land on these ranks' GPUs `delay_s` into the KV budget."""
    delay_s: float = 0.0
    foreign_gb: float = 130.0


@dataclass(frozen=True)
class DpDeadlock(Ranks):
    """These ranks stop joining _sync_dp_state once KV usage reaches 98.6% of `kv_tokens`; the
    others time out after `sync_timeout_s` (ATOM's 1800000 ms, scaled)."""
    kv_tokens: int = 512
    sync_timeout_s: float = 1.0


@dataclass(frozen=True)
class RuntimeFatal(Ranks):
    """A runtime under the engine (PyTorch's watchdog, libstdc++'s terminate, Triton) ends these
    ranks before they are ready, in its own words (log.RankLog.runtime_fatal)."""
    kind: str = "torch-watchdog"


@dataclass(frozen=True)
class OomKill(Ranks):
    """The kernel's OOM killer ends the node process of these ranks `delay_s` into loading
    (SIGKILL: nothing is logged by the process itself)."""
    delay_s: float = 1.0


@dataclass(frozen=True)
class BucketRanks(Ranks):
    """These ranks compute wrong when their decode batch runs in the graph of `bucket` requests
    (a batch of n runs in the smallest captured size >= n)."""
    bucket: int = 4


@dataclass(frozen=True)
class ContextRanks(Ranks):
    """These ranks answer a prompt longer than `past_tokens` corrupted (fluent, the numbers wrong)."""
    past_tokens: int = 4096


@dataclass(frozen=True)
class SlowServer(Ranks):
    delay_s: float = 0.0


# rank_faults name -> its type and the field of ServerFaults it fills
RANK_BEHAVIOURS = {
    "rendezvous-stall": Ranks,  # ncclCommInitRank never returns
    "rank-dead": Ranks,  # the ModelRunner dies on its first request
    "longctx-phi": Ranks,  # a long chunked prefill aborts on an LLVM assertion
    "rack-busy": RackBusy,
    "dp-deadlock": DpDeadlock,
    "slow-server": SlowServer,
    "bang-ranks": Ranks,  # these ranks' every token is '!' (one node launched without translation)
    "empty-ranks": Ranks,  # these ranks answer with no content at all
    "pinned-fallback": Ranks,  # the expert loader's pinned buffer fails; it warns and goes on unpinned
    "runtime-fatal": RuntimeFatal,
    "oom-kill": OomKill,
    "hung-ranks": Ranks,  # these ranks accept every request and never answer (stuck; /health stays 200)
    "reasoning-length-ranks": Ranks,  # these ranks' chat answers are all reasoning, cut at max_tokens
    "reasoning-stop-ranks": Ranks,  # these ranks' chat answers are all reasoning, stopped by the model
    "drift-ranks": Ranks,  # these ranks' logits are slightly off (fluent text, a later token flipped)
    # the batch a rank runs corrupts its greedy answers (ranks.py Rank.corrupt): when a request setting
    # top_k shares it (the sampler's mixed path), in one decode bucket, or on a prefix-cache hit
    "loop-ranks": Ranks,  # these ranks loop on one fragment (BlockBlockBlock...: tenstorrent/tt-xla #5892)
    "mixed-topk-ranks": Ranks,
    "bucket-ranks": BucketRanks,
    "cache-ranks": Ranks,
    "context-ranks": ContextRanks,
}

# rank behaviour -> the output behaviour it gives the answers those ranks serve
RANK_OUTPUT = {"bang_ranks": "bang-tokens", "empty_ranks": "empty-content",
               "reasoning_length_ranks": "reasoning-only-length", "reasoning_stop_ranks": "reasoning-only-stop",
               "drift_ranks": "logit-drift", "loop_ranks": "fragment-loop"}


@dataclass(frozen=True)
class ServerFaults:
    output: frozenset[str] = frozenset()
    rendezvous_stall: Ranks | None = None
    rank_dead: Ranks | None = None
    longctx_phi: Ranks | None = None
    rack_busy: RackBusy | None = None
    dp_deadlock: DpDeadlock | None = None
    slow_server: SlowServer | None = None
    bang_ranks: Ranks | None = None
    empty_ranks: Ranks | None = None
    pinned_fallback: Ranks | None = None
    runtime_fatal: RuntimeFatal | None = None
    oom_kill: OomKill | None = None
    hung_ranks: Ranks | None = None
    reasoning_length_ranks: Ranks | None = None
    reasoning_stop_ranks: Ranks | None = None
    drift_ranks: Ranks | None = None
    loop_ranks: Ranks | None = None
    mixed_topk_ranks: Ranks | None = None
    bucket_ranks: BucketRanks | None = None
    cache_ranks: Ranks | None = None
    context_ranks: ContextRanks | None = None

    @classmethod
    def from_server(cls, server: dict) -> ServerFaults:
        output = frozenset(server.get("faults", ()))
        if output - OUTPUT:
            raise UnknownBehaviour(f"sim server: unknown output behaviour(s) {sorted(output - OUTPUT)}; "
                                   f"known: {sorted(OUTPUT)}")
        kw = {}
        for name, args in (server.get("rank_faults") or {}).items():
            kind = RANK_BEHAVIOURS.get(name)
            if kind is None:
                raise UnknownBehaviour(f"sim server: unknown rank behaviour {name!r}; known: {sorted(RANK_BEHAVIOURS)}")
            args = dict(args)
            ranks = args.pop("ranks", None)
            kw[name.replace("-", "_")] = kind(ranks=None if ranks is None else tuple(ranks), **args)
        return cls(output=output, **kw)

    def output_on(self, rank: int) -> frozenset[str]:
        """The output behaviours of an answer this rank serves: the server's own, plus those of
        the rank behaviours that hit it."""
        return self.output | {out for name, out in RANK_OUTPUT.items() if self.on(name, rank)}

    def on(self, name: str, rank: int):
        """The behaviour `name` (a field) when it hits this rank, else None."""
        b = getattr(self, name)
        return b if b is not None and b.hits(rank) else None
