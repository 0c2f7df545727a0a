"""Contents of the files the simulated platform shows: the ATOM tree inside the container (with
the image's real byte sizes), perf_setup's report, the container's configuration.

The ATOM files are stand-ins, not ATOM: small importable modules shaped like the real ones
(atom/utils/envs.py resolves variables through a module __getattr__ that raises AttributeError
for an unknown name, as ATOM's does), padded with comment lines to the sizes the runbook lists
for image ...-ep8, so `stat -c%s` reads what it reads on a correctly patched rack.
"""
from __future__ import annotations

import hashlib
import time

PATCH_SIZES = {  # runbook "Check byte sizes", image gfx1250-atom-20260918-ep8
    "atom/model_ops/mla_unfused_gather.py": 7499,
    "atom/utils/envs.py": 47967,
    "atom/model_ops/attention_mla.py": 146235,
}
PREFIX_REQUIRED = {"hook": 129112, "translator": 8002216, "store": 1976}   # Appendix B
PREFIX_IMAGE_COPY = {"hook": 143217, "translator": 7531385, "store": 170}  # the image's own rocjitsu


def pad(text: str, size: int) -> bytes:
    """text + comment lines, exactly `size` bytes (UTF-8)."""
    body = text.encode()
    if len(body) > size:
        raise ValueError(f"stand-in content is {len(body)} B, larger than {size} B")
    # 80-byte comment lines, then one shorter line for the rest (built whole: a 146 kB file line by
    # line was ~1,800 copies of a growing string, ~1.5 ms each of a build's 12 padded files)
    lines, rest = divmod(size - len(body), 80)
    return body + (b"#" * 79 + b"\n") * lines + (b"#" * (rest - 1) + b"\n" if rest else b"")


_ENVS_HEAD = '''# SPDX-License-Identifier: MIT
# Stand-in for the image's atom/utils/envs.py (rackgate simulated rack).
"""Centralized environment variable definitions for ATOM (lazily evaluated)."""

import os
from collections.abc import Callable
from typing import Any

environment_variables: dict[str, Callable[[], Any]] = {
    "ATOM_DP_RANK": lambda: int(os.getenv("ATOM_DP_RANK", "0")),
    "ATOM_USE_TRITON_MLA": lambda: os.getenv("ATOM_USE_TRITON_MLA", "0") == "1",
    "ATOM_USE_TRITON_MLA_SHUFFLE_KV": lambda: os.getenv("ATOM_USE_TRITON_MLA_SHUFFLE_KV", "1") == "1",
    "ATOM_USE_FLYDSL_GATHER_KV_B_PROJ": lambda: (
        os.getenv("ATOM_USE_FLYDSL_GATHER_KV_B_PROJ", "0") == "1"
    ),
'''
_ENVS_PATCH = '''    # PR #2380: unfused torch fallback for gather_kv_b_proj (chunked prefill on gfx1250).
    "ATOM_UNFUSED_GATHER_KV_B_PROJ": lambda: (
        os.getenv("ATOM_UNFUSED_GATHER_KV_B_PROJ", "0") == "1"
    ),
'''
_ENVS_TAIL = '''    "ATOM_ENABLE_QK_NORM_ROPE_CACHE_QUANT_FUSION": lambda: (
        os.getenv("ATOM_ENABLE_QK_NORM_ROPE_CACHE_QUANT_FUSION", "0") == "1"
    ),
}


def __getattr__(name: str):
    # lazy evaluation of environment variables
    if name in environment_variables:
        return environment_variables[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
'''

_ATTENTION = '''# SPDX-License-Identifier: MIT
# Stand-in for the image's atom/model_ops/attention_mla.py (rackgate simulated rack).
from atom.utils import envs


class MLAAttention:
    def __init__(self):
        self.use_unfused_gather_kv_b_proj = envs.ATOM_UNFUSED_GATHER_KV_B_PROJ

    def gather_kv_b_proj(self, *args):
        if self.use_unfused_gather_kv_b_proj:
            from atom.model_ops.mla_unfused_gather import unfused_gather_kv_b_proj
            return unfused_gather_kv_b_proj(*args)
        raise NotImplementedError("fused Triton gather_kv_b_proj")


def _check(attn):
    assert not (attn.use_unfused_gather_kv_b_proj and envs.ATOM_USE_TRITON_MLA_SHUFFLE_KV)
'''
_ATTENTION_STOCK = '''# SPDX-License-Identifier: MIT
# Stand-in for the image's atom/model_ops/attention_mla.py (rackgate simulated rack, unpatched).


class MLAAttention:
    def gather_kv_b_proj(self, *args):
        raise NotImplementedError("fused Triton gather_kv_b_proj")
'''
_GATHER = '''# SPDX-License-Identifier: MIT
# Stand-in for atom/model_ops/mla_unfused_gather.py from PR #2380 (rackgate simulated rack).


def unfused_gather_kv_b_proj(*args):
    """Row gather, cache dequant, kv_b_proj, k_nope/v split, k_pe concat: pure torch."""
    return args
'''
_INIT = '''# SPDX-License-Identifier: MIT
# Stand-in for the image's atom/__init__.py (rackgate simulated rack).


def __getattr__(name: str):
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
'''


def atom_tree(patched: bool, zero: tuple[str, ...] = (), stock_envs: bool = False) -> dict[str, bytes]:
    """Relative path -> content of an ATOM package tree (patched: PR #2380 applied; stock_envs:
    applied except the envs.py hunk, which does not apply to this image)."""
    files = {
        "atom/__init__.py": _INIT.encode(),
        "atom/utils/__init__.py": b"",
        "atom/model_ops/__init__.py": b"",
    }
    if patched:
        files["atom/utils/envs.py"] = pad(_ENVS_HEAD + _ENVS_PATCH + _ENVS_TAIL, PATCH_SIZES["atom/utils/envs.py"])
        files["atom/model_ops/attention_mla.py"] = pad(_ATTENTION, PATCH_SIZES["atom/model_ops/attention_mla.py"])
        files["atom/model_ops/mla_unfused_gather.py"] = pad(_GATHER, PATCH_SIZES["atom/model_ops/mla_unfused_gather.py"])
    else:
        # The image as shipped: no new module, envs.py and attention_mla.py without the hunks.
        files["atom/utils/envs.py"] = pad(_ENVS_HEAD + _ENVS_TAIL, PATCH_SIZES["atom/utils/envs.py"] - len(_ENVS_PATCH.encode()))
        files["atom/model_ops/attention_mla.py"] = pad(_ATTENTION_STOCK, PATCH_SIZES["atom/model_ops/attention_mla.py"] - 1290)
    if patched and stock_envs:
        files["atom/utils/envs.py"] = pad(_ENVS_HEAD + _ENVS_TAIL, PATCH_SIZES["atom/utils/envs.py"] - len(_ENVS_PATCH.encode()))
    for rel in zero:  # an interrupted docker cp leaves the file, empty
        files[rel] = b""
    return files


def container_id(node: str, what: str) -> str:
    return hashlib.sha256(f"{node}/{what}".encode()).hexdigest()


def perf_report(host: str, at: float, mode: str, passed: int, failed: int, result: str, tbp_ok: bool) -> str:
    """A perf_setup_BPC21 report. Only three lines are known from the runbook and read by the
    suite: the mode line ("D — MTYPE=RW, XNACK=disabled"), "Perf steps: N passed, M failed" and
    "Result: [...]"; the step list around them is illustrative."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
    steps = ["CSC feature enable", "PPT boost settings revert", "SOC PCC off", "KLL chicken bits",
             "FCLK BW DPM", "GFX_ICG_TCP_CTRL2=0x2 on every XCD", "CPU governor performance, NUMA balancing off",
             "voltage offset -82 mV, CSC DVO 25 mV"]
    lines = [
        "=" * 62,
        f" perf_setup_BPC21 report   host {host}   {stamp}",
        "=" * 62,
        f" driver load : {mode} — MTYPE=RW, XNACK=disabled",
        "   modprobe amdgpu gpu_recovery=0 halt_if_hws_hang=1 mtype_local=0 noretry=1",
        "-" * 62,
    ]
    for n, s in enumerate(steps):
        ok = n < passed
        lines.append(f" [{'PASS' if ok else 'FAIL'}] {s}")
    lines += [
        " [WARN] Could not read BKC version",
        " [WARN] restricted shell: some diagnostics skipped",
        f" [{'PASS' if tbp_ok else 'FAIL'}] TBP read (BMC ssh)",
        "-" * 62,
        f"Perf steps: {passed} passed, {failed} failed",
        f"Result: [{result}]",
        "",
    ]
    return "\n".join(lines)
