"""SRV-BATCH: the same greedy answer whoever shares the batch (rackgate/probes/batch.py reads it).

Each DP rank is its own reference: its answer to a prompt asked alone, the first time. Every
later greedy answer of that prompt on that rank -- inside a batch of k requests, mixed with
sampled requests, the same prompt again (a prefix-cache hit) -- must have its tokens and lie
within the golden band's floors of it (rackgate/gates/golden.py `distance`; tokens alone where
the server gives no logprobs). No baseline is needed. A divergent answer is this rank's FAILED,
naming its node, the condition, the prompt, the first divergent position and both
continuations; the reading says which conditions moved and which held (one bucket; only mixed
with one sampling kind; every repeat of the prompt: the cache, the one thing they share).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import batch as batch_probe
from ..probes.batch import ALONE, Batched, Said
from ..probes.golden import Completion, pieces
from ..probes.served import UNRANKED
from .declare import Ranked, Shown, declare, ranked
from .golden import Band, Distance, distance
from .srv import hang_finding


@dataclass(frozen=True)
class Divergence:
    said: Said
    alone: Completion
    distance: Distance

    def position(self) -> int:
        d = self.distance
        return d.diverge_at if d.diverge_at is not None else d.worst_at

    def describe(self, table: dict[int, str]) -> str:
        now = self.said.answer
        assert now is not None
        start = max(0, self.position() - 3)
        head = "..." if start else ""
        a, b = "".join(self.alone.tokens[start:]), "".join(now.tokens[start:])
        return (f"{_at(self.said.rank, table)} {self.said.condition}, prompt {self.said.prompt} at position "
                f"{self.position()}: {self.distance.describe()}: alone {head}{a[:60]!r} | {self.said.condition} "
                f"{head}{b[:60]!r}")


def _at(rank: int | None, table: dict[int, str]) -> str:
    return f"{table.get(rank, '?')}/dp{rank}" if rank is not None else "the server"


def _text(c: Completion) -> Completion:
    return Completion(c.prompt, c.text, pieces(c.text), rank=c.rank, finish=c.finish)


def diverged(said: list[Said] | tuple[Said, ...], floor: tuple[float, float],
             condition: str | None = None) -> list[Divergence]:
    """Every greedy answer (of `condition`, or of every condition) that left its rank's alone
    answer of the same prompt: other tokens, or (both with logprobs) a move beyond the floors."""
    band = Band(*floor)
    alone = {(x.rank, x.prompt): x.answer for x in said if x.condition == ALONE and x.answer is not None}
    first: set[tuple[int | None, str]] = set()
    out = []
    for x in said:
        key = (x.rank, x.prompt)
        if x.condition == ALONE and key not in first:
            first.add(key)
            continue
        ref = alone.get(key)
        if x.answer is None or ref is None or (condition is not None and x.condition != condition):
            continue
        a, b = (ref, x.answer) if ref.has_logprobs and x.answer.has_logprobs else (_text(ref), _text(x.answer))
        d = distance(a, b)
        if not d.within(band):
            out.append(Divergence(Said(x.condition, x.prompt, x.rank, b, x.error), a, d))
    return out


def reading(mine: list[Divergence], said: list[Said], rank: int | None) -> str:
    """Which conditions moved this rank's answers and which held, and what that reads as."""
    conds = list(dict.fromkeys(x.condition for x in said if x.rank == rank and x.condition != ALONE))
    moved = list(dict.fromkeys(d.said.condition for d in mine))
    held = [c for c in conds if c not in moved]
    line = f"moved under {', '.join(moved)}" + (f"; held under {', '.join(held)}" if held else "")
    cached = [c for c in conds if c.startswith("cache hit")]
    if cached and all(c in moved for c in cached) and not held:
        return line + ("; every repeat of a prompt moved, alone too: a prefix-cache hit (the one thing every repeat "
                       "shares) -- compare with --enable_prefix_caching off, and the KV cache dtype")
    if moved and all(c.startswith("cache hit") for c in moved):
        return line + ("; only when the prompt's prefix was cached: a prefix-cache hit answers otherwise than a miss "
                       "(vllm #50702; the KV cache's dtype: vllm #45562) -- compare with prefix caching off")
    buckets = [c for c in moved if c.startswith("bucket ")]
    if buckets and all(not c.startswith(("mixed", "cache")) for c in moved):
        return line + (f"; only at {', '.join(buckets)}: a kernel (a tuned MoE/GEMM config, a captured graph) wrong "
                       "for that decode batch size")
    if moved and all(c.startswith("mixed") for c in moved):
        return line + ("; only when sampled requests share the batch: the sampler's mixed path (ROCm/aiter #5192: "
                       "top_k set on one request and not another)")
    return line


def rank_batch(r: Ranked[Batched], rack: Rack, where: str) -> list[str]:
    """This rank gave the same greedy answers alone, in every batch bucket, mixed with sampled
    requests and cached: a hang of the rounds is SRV-DEADLOCK's on the hung rank; nothing back or
    no alone answer to compare with, could not observe; greedy requests answered with an error
    while others were answered are this rank's FAILED; then every divergence of its answers."""
    run = r.mine.run
    table = dict(run.table)
    mine_all = r.rank == UNRANKED or len(table) <= 1
    rank = None if mine_all else r.rank
    if run.hang is not None:
        if r.rank in run.hang.ranks or not run.hang.ranks or mine_all:
            return hang_finding("SRV-BATCH", f"{run.hang_in}: {run.hang.seen}", run.hang.where)
        raise CouldNotObserve(f"SRV-BATCH's requests hung at {run.hang.where} ({run.hang_in}; see SRV-DEADLOCK): "
                              f"dp{r.rank} was not judged")
    if run.blind:
        raise CouldNotObserve(run.blind)
    said = [x for x in run.said if x.rank == rank]
    if not said:
        raise CouldNotObserve(f"{_at(rank, table)}: none of SRV-BATCH's greedy requests came back")
    errors = [x for x in said if x.answer is None]
    if all(y.answer is None for y in run.said):
        raise CouldNotObserve(f"none of SRV-BATCH's {len(run.said)} greedy requests was answered "
                              f"(e.g. {errors[0].condition}: {errors[0].error})")
    if errors:
        e = errors[0]
        return [f"{len(errors)} of {len(said)} greedy requests on {_at(rank, table)} answered with an error while "
                f"the others were answered (e.g. {e.condition}, prompt {e.prompt}: {e.error})"]
    missing = sorted({x.prompt for x in said} - {x.prompt for x in said if x.condition == ALONE and x.answer})
    if missing:
        raise CouldNotObserve(f"{_at(rank, table)}: no answer alone to {', '.join(missing)} to compare with")
    every = diverged(run.said, run.floor)
    mine = [d for d in every if d.said.rank == rank]
    if not mine:
        return []
    moved = sorted({d.said.rank for d in every if d.said.rank is not None})
    ranks = sorted({x.rank for x in run.said if x.rank is not None})
    over = f"; {len(moved)} of {len(ranks)} ranks moved ({', '.join(f'dp{q}' for q in moved)})" if ranks else ""
    nodes = {table.get(q) for q in moved}
    if ranks and len(nodes) == 1 and set(moved) == {q for q in ranks if table.get(q) in nodes} and len(moved) > 1:
        over += f": every rank of {next(iter(nodes))} and no other, a node-specific cause"
    elif ranks and set(moved) == set(ranks) and len(ranks) > 1:
        over += ": every rank alike, the image (its kernels, its sampler), not one GPU"
    n = len(said) - len({x.prompt for x in said})  # every answer but each prompt's first, alone
    first = [d for i, d in enumerate(mine) if all(e.said.condition != d.said.condition for e in mine[:i])]
    shown = "; ".join(d.describe(table) for d in first[:4]) + (f" (+{len(mine) - min(4, len(first))} more)"
                                                                 if len(mine) > min(4, len(first)) else "")
    lp = "" if all(d.distance.dlogprob is not None for d in mine) else " (tokens alone compared where the server " \
        "gives no logprobs)"
    named = ", ".join(f"{p} = {run.prompts[p][:60]!r}" for p in dict.fromkeys(d.said.prompt for d in mine)
                      if p in run.prompts)
    return [f"{len(mine)} of {n} greedy answers on {_at(rank, table)} differ from its own answers alone{lp}: "
            f"{reading(mine, said, rank)}{over}; {shown} (band {Band(*run.floor).describe()})"
            + (f"; prompts: {named}" if named else "")]


def batch_shown(r: Ranked[Batched], rack: Rack) -> list[Shown]:
    b = r.ranks.get(r.rank)
    if b is None:
        return []
    run = b.run
    out = [Shown(t, x) for t, x in run.shown]
    if run.refused:
        out.append(Shown("sampled requests the server refused (not in the batch; our request, not a fault)",
                         "\n".join(f"{k}: {why}" for k, why in run.refused)))
    return out


def batch_applies(rack: Rack) -> str:
    return "" if rack.serving.batch else "serving.batch = false in the rack file: the batch comparison does not apply"


declare(ranked("SRV-BATCH", probe=batch_probe.asked, judge=rank_batch, shows=batch_shown, applies=batch_applies,
               unranked=True))
