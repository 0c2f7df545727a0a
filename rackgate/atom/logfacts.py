"""ATOM's log facts and their parsers, for the layers above the probes (the boot watcher, the
hand-written checks, the benchmarks): they live in rackgate/probes/atom_log_facts.py, where the
declared checks' probes read them (SRV-KV, SRV-TRANSLATION, SRV-ENGINE-ARGS)."""
from __future__ import annotations

from ..probes.atom_log_facts import (
    ENGINE_KWARGS,
    EXPERTS,
    KV_ERROR,
    KV_USAGE,
    MEGAMOE,
    MEMORY_BUDGET,
    RCCL_LOADED,
    SYNC_DP_FAILED,
    HotswapCounts,
    KvError,
    KwargsError,
    LogFactError,
    MemoryBudget,
    Unparsed,
    engine_kwargs,
    experts,
    kv_error,
    kv_usage,
    memory_budget,
    sync_dp_failed,
)

__all__ = ["ENGINE_KWARGS", "EXPERTS", "KV_ERROR", "KV_USAGE", "MEGAMOE", "MEMORY_BUDGET", "RCCL_LOADED",
           "SYNC_DP_FAILED", "HotswapCounts", "KvError", "KwargsError", "LogFactError", "MemoryBudget", "Unparsed",
           "engine_kwargs", "experts", "kv_error", "kv_usage", "memory_budget", "sync_dp_failed"]
