"""Judgments over the server's log facts: SRV-KV, SRV-ENGINE-ARGS, SRV-DEADLOCK, SRV-TRANSLATION."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import boot_log
from ..probes import deadlock as deadlock_probe
from ..probes import engine_args as engine_args_probe
from ..probes.atom_log_facts import KvError, MemoryBudget, Unparsed
from ..probes.boot_log import Hotswap, RankKv
from ..probes.degenerate import degenerate
from ..probes.engine_args import EngineArgs
from .declare import Check, Fact, Finding, Ranked, Shown, declare, ranked
from .srv import finding_at, hang_finding


def expert_counts(model_experts: int, ep_size: int, per_rank: int = 0) -> tuple[int, ...]:
    """The `experts=` figures a healthy rank may log: the model's global count (current ATOM) or
    its share per EP rank (the runbook's image); `per_rank` (serving.experts_per_rank) when the
    rack file names it. Empty: not checked."""
    out = []
    if model_experts:
        out.append(model_experts)
        if ep_size > 0 and model_experts % ep_size == 0:
            out.append(model_experts // ep_size)
    if per_rank and per_rank not in out:
        out.append(per_rank)
    return tuple(out)


def kv(budgets: list[MemoryBudget], experts: list[int], min_kv_gb: float, want_experts: int | Iterable[int],
       errors: Sequence[KvError] = ()) -> list[str]:
    """One rank's `Memory budget:` lines (the last one counts), its `Per-request cache tensor ...
    exceeds available KV budget` error (current ATOM raises it before the budget line) and its
    `experts=` figures. want_experts: the accepted counts (expert_counts), or one int."""
    allowed = (want_experts,) if isinstance(want_experts, int) else tuple(want_experts)
    allowed = tuple(a for a in allowed if a)
    out = []
    if errors:
        e = errors[-1]
        out.append(f"the KV budget is {e.available_gb:.2f}GB, under the {e.reserved_gb:.2f}GB per-request cache for "
                   f"{e.slots} slots" + (f" at --gpu-memory-utilization {e.utilization:.2f}" if e.utilization else "")
                   + f": {e.line[:200]}")
    if not budgets:
        return out or ["no `Memory budget:` line and no KV budget error (the rank never reached the KV budget "
                       "arithmetic, or died before it)"]
    b = budgets[-1]
    if b.available_for_kv <= min_kv_gb:
        out.append(f"available_for_kv={b.available_for_kv:.2f}GB (total_gpu={b.total_gpu}GB, utilization="
                   f"{b.utilization}, budget={b.budget}GB, peak_torch={b.peak_torch}GB, cudagraph_est="
                   f"{b.cudagraph_est}GB)")
    bad = sorted({e for e in experts if e not in allowed})
    if allowed and bad:
        out.append(f"experts={','.join(map(str, bad))} where the model has {' or '.join(map(str, allowed))} "
                   "(global, or per EP rank)")
    return out


# SRV-KV: one item per DP rank, on what the rank logged while booting (its node's server log,
# sees="log": judged also when the boot failed -- a negative budget is what stopped it).
def rank_kv(got: Ranked[RankKv], rack: Rack, where: str) -> list[str]:
    mine = got.mine
    if mine.unseen is not None:
        raise mine.unseen
    cfg = rack.serving
    want = expert_counts(cfg.model_experts, cfg.ep_size or len(rack.nodes) * rack.gpus_per_node, cfg.experts_per_rank)
    return kv(list(mine.budgets), list(mine.experts), cfg.min_available_kv_gb, want, mine.errors)


def kv_shown(got: Ranked[RankKv], rack: Rack) -> list[Shown]:
    mine = got.ranks.get(got.rank)
    if mine is None or mine.unseen is not None:
        return []
    return [Shown(f"Memory budget lines of dp{got.rank}",
                  "\n".join([b.line for b in mine.budgets] + [e.line for e in mine.errors]) or "(none)")]


def kv_facts(got: Ranked[RankKv], where: str) -> list[Fact]:
    """The rank's last budget (-m regression), where=node3/dp9 as baselines recorded it."""
    mine = got.ranks.get(got.rank)
    if mine is None or not mine.budgets:
        return []
    last = mine.budgets[-1]
    out = [Fact("serving.kv.available_gb", last.available_for_kv, "GB", where)]
    if last.num_kvcache_blocks is not None:
        out.append(Fact("serving.kv.blocks", last.num_kvcache_blocks, where=where))
    return out


declare(ranked("SRV-KV", probe=boot_log.kv_budgets, judge=rank_kv, shows=kv_shown, facts=kv_facts, sees="log"))


def engine_args(kwargs: dict[object, object], profile_dir: str, env: dict[str, str] | None = None) -> list[str]:
    """env: the launch environment; profiling asked there (ATOM_TORCH_PROFILER_DIR) is judged
    even when serving.profile_dir is not set -- it never passes silently."""
    out = []
    asked = (env or {}).get("ATOM_TORCH_PROFILER_DIR")
    if asked and not profile_dir and kwargs.get("torch_profiler_dir") in (None, ""):
        out.append(f"ATOM_TORCH_PROFILER_DIR={asked} in the launch environment, but 'torch_profiler_dir': "
                   f"{kwargs.get('torch_profiler_dir')!r} in Engine kwargs: profiling is not in effect "
                   "(use --torch-profiler-dir)")
    if "max_model_len" not in kwargs:
        out.append("'max_model_len' missing from Engine kwargs")
    elif kwargs["max_model_len"] is not None:
        out.append(f"'max_model_len': {kwargs['max_model_len']!r} (a cap: K3's reasoning budget is truncated)")
    if profile_dir:
        got = kwargs.get("torch_profiler_dir")
        if got is None or isinstance(got, Unparsed):
            out.append(f"'torch_profiler_dir': {got!r} while profiling is asked for (serving.profile_dir="
                       f"{profile_dir})")
        elif str(got).rstrip("/") != profile_dir.rstrip("/"):
            out.append(f"'torch_profiler_dir': {got!r}, not serving.profile_dir={profile_dir}")
    return out


# SRV-ENGINE-ARGS: one item per node, each node's own process's `Engine kwargs:` line (its server
# log, sees="log"): a node launched otherwise than the others is named, not hidden by the head's.
def logged_args(got: EngineArgs, rack: Rack, where: str) -> list[str]:
    return engine_args(got.kwargs, rack.serving.profile_dir, rack.launch.env)


def engine_args_shown(got: EngineArgs, rack: Rack) -> list[Shown]:
    return [Shown(f"Engine kwargs ({got.node})", got.line)]


def engine_kwarg_facts(got: EngineArgs, where: str) -> list[Fact]:
    """The kwargs the server ran with (-m regression, one fact per kwarg, named by the kwarg): the
    head's, the node that serves the API, as baselines have recorded them."""
    if not got.head:
        return []
    return [Fact("serving.engine.kwarg", v if isinstance(v, (int, float, str)) else repr(v), where=str(k))
            for k, v in got.kwargs.items()]


declare(Check("SRV-ENGINE-ARGS", "node", probe=engine_args_probe.logged, judge=logged_args, shows=engine_args_shown,
              facts=engine_kwarg_facts, sees="log"))


def deadlock(timed_out: dict[int, str], all_ranks: list[int], kv_lines: dict[int, str] | None = None,
             where: dict[int, str] | None = None) -> list[str]:
    """SRV-DEADLOCK decides on log evidence only: timed_out is rank -> its `_sync_dp_state
    failed` line. Some ranks timed out and some did not: the silent ones never joined the
    collective (named, with their last `KV usage:` line when the log has one). Nobody timed out:
    no deadlock, however slow the answers were (latency alone is never this verdict)."""
    if not timed_out:
        return []
    kv_lines, where = kv_lines or {}, where or {}
    silent = [r for r in all_ranks if r not in timed_out]
    def name(r: int) -> str:
        return f"{where[r]}/dp{r}" if r in where else f"dp{r}"
    names = ", ".join(name(r) for r in silent) if silent else "none (every rank timed out)"
    kv = "; ".join(f"{name(r)} last logged {kv_lines[r][:160]!r}" for r in silent if r in kv_lines)
    return [f"{len(timed_out)} of {len(all_ranks)} ranks logged `_sync_dp_state failed` "
            f"({next(iter(timed_out.values()))[:80]}); the rank(s) that did not: {names}" + (f"; {kv}" if kv else "")]


# SRV-DEADLOCK: one item per DP rank, judged on what every rank logged under the session's one load
# (probes/deadlock.py `under_load`), never on latency.
def rank_synced(r: Ranked[deadlock_probe.Synced], rack: Rack, where: str) -> list[str]:
    """This rank joined ATOM's DP sync under the load. Read in this order: answers that are not
    language (SRV-SANITY's, on the ranks that gave them); some ranks logged `_sync_dp_state failed`:
    this rank PASSES when it logged it too (or its node logged one unlabelled line per rank), FAILS
    when it did not (its last `KV usage:` line in the text), and where the lines carry no rank label
    the node whose ranks are quiet is named; no rank logged it and requests hung while others came
    back: SRV-DEADLOCK's FAILED on the hung rank (every rank's, where the hint does not name it);
    nothing came back (or none was answered) and no line logged: could not observe."""
    me = r.mine
    run = me.run
    spread = run.spread
    bad = spread.share(lambda g: g.stopped or (degenerate(g.text) if not g.error else None), "answers degenerate")
    if bad:
        ranks = {g.ask.rank for g in bad.bad}
        if r.rank in ranks or None in ranks or not bad.where:
            return finding_at("SRV-SANITY", bad.where or run.url, f"SRV-DEADLOCK's load: {bad.line}")
        raise CouldNotObserve(f"the load's answers were degenerate at {bad.where} (SRV-SANITY): dp{r.rank} was not "
                              "judged under it")
    unanswered = run.unanswered
    timed_out = {q: s.timed_out for q, s in r.ranks.items() if s.timed_out}
    if timed_out or run.unlabelled:
        if me.timed_out:
            return []
        mine = run.node_ranks.get(me.node, range(0))
        if mine and run.unlabelled.get(me.node, 0) >= len(mine):
            return []  # its node logged one unlabelled timeout per rank: every rank of it did
        hung = f"; the client saw {unanswered} of {spread.asked} requests hang with no error" if unanswered else ""
        if run.unlabelled:
            quiet = [f"{n} (logged {run.unlabelled.get(n, 0)} timeouts for dp{rs.start}-dp{rs.stop - 1})"
                     for n, rs in run.node_ranks.items() if run.unlabelled.get(n, 0) < len(rs)]
            return [Finding(f"`{deadlock_probe.SYNC_FAILED}` logged without rank labels (launch.rank_labels off); "
                            f"the rank that did not log it is on: {', '.join(quiet) or '?'}{hung}", where=me.node)]
        kv_lines = {q: s.kv for q, s in r.ranks.items() if s.kv}
        return [f + hung for f in deadlock(timed_out, list(r.ranks), kv_lines, {q: s.node for q, s in r.ranks.items()})]
    if run.hang is not None:
        if not run.hang.ranks or r.rank in run.hang.ranks:
            return hang_finding("SRV-DEADLOCK", run.hang.seen, run.hang.where,
                                own=f"no rank logged `{deadlock_probe.SYNC_FAILED}`")
        return []  # its requests came back; another rank's hung (that rank's item FAILS)
    if unanswered:
        raise CouldNotObserve(f"{unanswered} of {spread.asked} requests unanswered after {run.window_s:g}s "
                              f"(serving.deadlock_window_s), none came back, and no rank logged "
                              f"`{deadlock_probe.SYNC_FAILED}`: slow, not a deadlock by the log; wait at least ATOM's "
                              "DP-sync timeout (1800 s) to tell")
    return []


def synced_shown(r: Ranked[deadlock_probe.Synced], rack: Rack) -> list[Shown]:
    me = r.ranks.get(r.rank)
    if me is None:
        return []
    run = me.run
    out = [Shown("load and _sync_dp_state lines", run.spread.evidence() + f"\n(window {run.window_s:g}s)\n"
                 + "\n".join(run.lines)),
           Shown(f"dp{me.rank}: its `_sync_dp_state failed` and last `KV usage:` lines",
                 f"{me.timed_out or '(no _sync_dp_state failed line)'}\n{me.kv or '(no KV usage line)'}")]
    return out + [Shown(title, text) for title, text in (run.hang.shown if run.hang is not None else ())]


declare(ranked("SRV-DEADLOCK", probe=deadlock_probe.under_load, judge=rank_synced, shows=synced_shown))


def translation(silicon: str, per_node: dict[str, dict[str, int]], ranks_per_node: int, min_translated: int,
                min_reused: int) -> list[str]:
    """per_node: node -> HotswapCounts as a dict. On B0 zero translations is healthy; a
    translation_status other than 0 is a failure anywhere."""
    out = []
    for node, c in per_node.items():
        if c["bad_status"]:
            out.append(f"{node}: {c['bad_status']} line(s) with translation_status=[^0]")
        if silicon != "A0":
            continue
        if c["installed"] < ranks_per_node:
            out.append(f"{node}: `installed eager` {c['installed']} times for {ranks_per_node} ranks (the hook is "
                       "not attached on every rank)")
        if c["translated"] < min_translated or c["reused"] < min_reused:
            out.append(f"{node}: outcome=translated {c['translated']} (want >= {min_translated}), reused tier "
                       f"{c['reused']} (want >= {min_reused}) with installed eager {c['installed']}")
    return out


# SRV-TRANSLATION: one item per node, the hook's counts in the node's server log (sees="log").
def node_translation(got: Hotswap, rack: Rack, where: str) -> list[str]:
    cfg = rack.serving
    findings = translation(rack.silicon, {got.node: vars(got.counts)}, rack.gpus_per_node, cfg.min_translated,
                           cfg.min_reused)
    return [f"silicon {rack.silicon}: " + "; ".join(findings)] if findings else []


def hotswap_shown(got: Hotswap, rack: Rack) -> list[Shown]:
    return [Shown(f"hotswap counts ({got.node})", str(vars(got.counts)))]


def hotswap_facts(got: Hotswap, where: str) -> list[Fact]:
    return [Fact(f"serving.translation.{k}", getattr(got.counts, k), where=where)
            for k in ("installed", "translated", "reused")]


declare(Check("SRV-TRANSLATION", "node", probe=boot_log.hotswap, judge=node_translation, shows=hotswap_shown,
              facts=hotswap_facts, sees="log"))
