"""Judgments over the server's log facts: SRV-KV, SRV-ENGINE-ARGS, SRV-DEADLOCK, SRV-TRANSLATION."""
from __future__ import annotations

from ..atom.logfacts import MemoryBudget, Unparsed


def kv(budgets: list[MemoryBudget], experts: list[int], min_kv_gb: float, want_experts: int) -> list[str]:
    """One rank's `Memory budget:` lines (the last one counts) and `experts=` figures."""
    if not budgets:
        return ["no `Memory budget:` line (the rank never reached the KV budget arithmetic, or died before it)"]
    b = budgets[-1]
    out = []
    if b.available_for_kv <= min_kv_gb:
        out.append(f"available_for_kv={b.available_for_kv:.2f}GB (total_gpu={b.total_gpu}GB, utilization="
                   f"{b.utilization}, budget={b.budget}GB, peak_torch={b.peak_torch}GB, cudagraph_est="
                   f"{b.cudagraph_est}GB)")
    bad = sorted({e for e in experts if e != want_experts})
    if want_experts and bad:
        out.append(f"experts={','.join(map(str, bad))} where EP gives {want_experts} per rank")
    return out


def engine_args(kwargs: dict, profile_dir: str, env: dict | None = None) -> list[str]:
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


def deadlock(timed_out: dict[int, str], all_ranks: list[int], stalled: bool) -> list[str]:
    """timed_out: rank -> its `_sync_dp_state failed` line. Healthy: nobody timed out and the
    load completed."""
    if timed_out:
        silent = [r for r in all_ranks if r not in timed_out]
        name = (f"dp{silent[0]}" if len(silent) == 1 else
                ", ".join(f"dp{r}" for r in silent) if silent else "none (every rank timed out)")
        return [f"{len(timed_out)} of {len(all_ranks)} ranks logged `_sync_dp_state failed` "
                f"({next(iter(timed_out.values()))[:80]}); the rank that did not: {name}"]
    if stalled:
        return ["the load did not complete and no rank has logged `_sync_dp_state failed` yet: throughput is "
                "not moving"]
    return []


def translation(silicon: str, per_node: dict[str, dict], ranks_per_node: int, min_translated: int,
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
