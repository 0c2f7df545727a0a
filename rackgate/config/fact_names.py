"""One naming scheme for facts: `area.thing[.unit]`, and the old names baselines still carry.

A fact's identity is its name plus `where` (node, GPU, pair, rank, kwarg): neither may hold
anything that changes between two healthy runs (a port, a PID, a time). Baselines recorded
before the scheme keep loading: `canonical()` maps each old name (and an old `where` that
held the server URL) to the current one.
"""
from __future__ import annotations

RACK = "rack"  # `where` of a fact that belongs to the whole rack (cold start, GSM8K, benchmark)

# old name -> current name
OLD_NAMES = {
    "image": "platform.image.tag",
    "image_id": "platform.image.id",
    "gpu_count": "platform.gpu.count",
    "hbm_gib": "platform.gpu.hbm_gib",
    "patch_bytes": "platform.patch.size_bytes",
    "fabric.bw.read": "fabric.ubench07.read_gbps",
    "fabric.bw.write": "fabric.ubench07.write_gbps",
    "fabric.bw.bidir": "fabric.ubench07.bidir_gbps",
    "cold_start_s": "serving.cold_start_s",
    "available_for_kv_gb": "serving.kv.available_gb",
    "total_tok_s_per_gpu": "bench.tok_s_per_gpu",
    "gsm8k_quick_accuracy": "accuracy.gsm8k.quick",
    "gsm8k_strict_match": "accuracy.gsm8k.full",
}
# Facts whose old `where` was the server URL (a new port every run): now the rack's.
_WHERE_WAS_URL = {"accuracy.gsm8k.quick", "accuracy.gsm8k.full"}


def canonical(name: str, where: str = "") -> tuple[str, str]:
    """(current name, where) for a fact as an older baseline stored it."""
    new = OLD_NAMES.get(name, name)
    if new in _WHERE_WAS_URL and "://" in where:
        where = RACK
    return new, where
