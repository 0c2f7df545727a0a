"""The fatal boot signatures (catalogue row SRV-BOOT) and what each one points at.

The catalogue's signature strings are the match set (one source of truth); the hints below add,
per signature, the cause the runbook names for it. selftest/serving checks the two agree.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..catalogue import row
from ..lines import clean

HINTS: dict[str, str] = {
    "exceeds available KV budget":
        "the KV budget is negative: on a config that booted before, someone else's weights are loading "
        "(run PLAT-FREE, do not raise --gpu-memory-utilization); on a new config lower --max-num-batched-tokens",
    "Not enough memory for KV cache":
        "not one KV block fits: the GPU is taken or the budget arithmetic left nothing (see SRV-KV)",
    "MEGA_WIRE was renamed to MEGA_DISPATCH_WIRE":
        "remove MEGA_WIRE from the launch environment (see SRV-LAUNCH-LINT)",
    "PHINode::setIncomingValue":
        "Triton gather_kv_b_proj codegen: needs PR #2380 and ATOM_UNFUSED_GATHER_KV_B_PROJ=1",
    "assert not ca_comm.disabled":
        "ATOM_USE_CUSTOM_ALL_GATHER and AITER_CUSTOM_AR_USE_SYMM_MEM must be set together",
    "FAIL: HOTSWAP=1 but /app/rjprefix not found":
        "the rocjitsu prefix is not in the container (docker rm removes it): re-install it; do not set HOTSWAP=0",
    "0 bytes is free":
        "another job owns the GPUs: check docker ps on every node (PLAT-FREE)",
    "Memory access fault by GPU":
        "a GPU page fault: read dmesg on that node (PLAT-DMESG) before relaunching",
    "proc died unexpectedly":
        "a worker process died: the lines above it in that node's log say why",
}


@dataclass(frozen=True)
class Fatal:
    signature: str
    hint: str


def signatures() -> tuple[str, ...]:
    return row("SRV-BOOT").signatures


@functools.lru_cache(maxsize=1)
def _any() -> re.Pattern:
    """One scan of the line for every signature (the watcher runs this on every line it reads)."""
    return re.compile("|".join(re.escape(s) for s in signatures()))


def match(text: str) -> Fatal | None:
    """The first fatal signature a log line carries (ANSI colour and CRs removed first), or None."""
    if "\x1b" in text or "\r" in text or "\x9b" in text:
        text = clean(text)
    if _any().search(text) is None:
        return None
    for sig in signatures():
        if sig in text:
            return Fatal(sig, HINTS.get(sig, ""))
    return None
