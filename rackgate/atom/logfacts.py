"""Facts from ATOM log messages, parsed against ATOM's own format strings.

- model_runner.py get_num_blocks():
  "Memory budget: total_gpu={:.2f}GB, free={:.2f}GB, utilization={}, budget={:.2f}GB,
   peak_torch={:.2f}GB, non_torch={:.2f}GB, cudagraph_est={:.2f}GB, safety={:.2f}GB,
   available_for_kv={:.2f}GB, block_bytes={}, num_kvcache_blocks={}"
- arg_utils.py _get_engine_kwargs(): "Engine kwargs: {kwargs}" (parsed in rackgate/probes/atom_log_facts.py) -- values may be
  objects (CompilationConfig(...), <CUDAGraphMode.FULL: 2>) that are not Python literals.
  Current ATOM raises the second before it logs the first; the image the runbook was written on
  logged the budget first. SRV-KV reads either (whichever comes first).
- fused_moe mega_moe: "[MORI-V2] Created MegaMoE: ep_rank=%d ep_size=%d hidden=%d inter=%d experts=%d ..."
  -- experts is the model's global count (896 for Kimi-K3) on current ATOM, the per-rank share (56
  at EP16) on the runbook's image.
- engine_core.py _sync_dp_state(): "{label}: _sync_dp_state failed: {e}" (label "Engine Core")
- the scheduler's stats line, quoted by the runbook: "Engine 011: prompt throughput: 0.0 tok/s,
  Running: 1, KV usage: 98.6%"

A line that carries the keyword but a value that is not a number (`available_for_kv=1.2.3GB`)
raises LogFactError, a could-not-observe error: never a guess, never another exception.
- the rocjitsu hook (runbook appendix B): "[hsa-hotswap-rj] installed eager ...",
  "... outcome=translated ...", "[hsa-hotswap-rj] reused tier=aot ... status=0",
  and translation_status=<n> where n != 0 is a failed translation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import overload

from ..errors import UnrecognisedOutput
from ..lines import clean
from ..probes.atom_log_facts import ENGINE_KWARGS, KvError, KwargsError, MemoryBudget, Unparsed, engine_kwargs

# the `Engine kwargs:` reader is a probe's (SRV-ENGINE-ARGS and ACC-FAKE-EPLB read it through their probes)
__all__ = ["ENGINE_KWARGS", "KwargsError", "Unparsed", "engine_kwargs"]


class LogFactError(UnrecognisedOutput, ValueError):
    """A log line that names a fact but whose value does not parse (one line: which, and why)."""


@overload
def _num(field: str, text: str) -> float: ...
@overload
def _num(field: str, text: str, kind: type[int]) -> int: ...
def _num(field: str, text: str, kind: type[float] | type[int] = float) -> float:
    try:
        v = kind(text)
    except (ValueError, OverflowError):
        raise LogFactError(f"{field}={text[:40]!r} is not a number") from None
    if kind is float and v != v or v in (float("inf"), float("-inf")):
        raise LogFactError(f"{field}={text[:40]!r} is not a finite number")
    return v


MEMORY_BUDGET = re.compile(r"Memory budget: (?P<body>.*)$")
_KV_FIELD = re.compile(r"(\w+)=(-?[\d.]+)(GB)?")
KV_USAGE = re.compile(r"KV usage: (?P<pct>[\d.]+)%")
KV_ERROR = re.compile(r"Per-request cache tensor \((?P<req>-?[\d.]+)GB for (?P<slots>\d+) slots\) exceeds "
                      r"available KV budget \((?P<avail>-?[\d.]+)GB\)(?: at --gpu-memory-utilization "
                      r"(?P<util>\d+(?:\.\d+)?))?")
EXPERTS = re.compile(r"\bexperts=(\d+)\b")
MEGAMOE = "Created MegaMoE"
SYNC_DP_FAILED = re.compile(r"(?P<label>[\w ]+): _sync_dp_state failed: (?P<err>.*)$")
RCCL_LOADED = "load RCCL version"


def memory_budget(message: str) -> MemoryBudget | None:
    """A `Memory budget:` message -> its figures (GB as printed); None for any other line."""
    message = clean(message)
    m = MEMORY_BUDGET.search(message)
    if not m:
        return None
    f = {k: _num(k, v) for k, v, _ in _KV_FIELD.findall(m["body"])}
    if "available_for_kv" not in f:
        if "available_for_kv=" in m["body"]:
            raise LogFactError(f"`Memory budget:` line with an unreadable available_for_kv: {m['body'][:160]!r}")
        return None
    blocks = f.get("num_kvcache_blocks")
    if blocks is not None and (blocks < 0 or not float(blocks).is_integer()):
        raise LogFactError(f"num_kvcache_blocks={blocks} is not a block count")
    return MemoryBudget(f.get("total_gpu"), f.get("utilization"), f.get("budget"), f.get("peak_torch"),
                        f.get("cudagraph_est"), f["available_for_kv"],
                        int(blocks) if blocks is not None else None, message.strip())


def kv_error(message: str) -> KvError | None:
    """A `Per-request cache tensor ... exceeds available KV budget` message -> its figures."""
    message = clean(message)
    m = KV_ERROR.search(message)
    if not m:
        if "exceeds available KV budget" in message and "Per-request cache tensor (" in message:
            raise LogFactError(f"KV budget error whose figures do not parse: {message.strip()[:160]!r}")
        return None
    return KvError(_num("per-request cache", m["req"]), _num("slots", m["slots"], int),
                   _num("available KV budget", m["avail"]),
                   _num("gpu-memory-utilization", m["util"]) if m["util"] else None, message.strip())


def experts(message: str) -> int | None:
    m = EXPERTS.search(clean(message))
    return _num("experts", m.group(1), int) if m else None


def kv_usage(message: str) -> float | None:
    """The KV usage percentage of a scheduler stats line (`... KV usage: 98.6%`), else None."""
    m = KV_USAGE.search(clean(message))
    return _num("KV usage", m["pct"]) if m else None


def sync_dp_failed(message: str) -> str | None:
    """The error text of a `_sync_dp_state failed:` line, else None."""
    m = SYNC_DP_FAILED.search(clean(message))
    return m["err"].strip() if m else None


@dataclass
class HotswapCounts:
    installed: int = 0
    translated: int = 0
    reused: int = 0
    bad_status: int = 0

    def add(self, line: str) -> None:
        """Count one line as `grep -c` would count it for each of the runbook's four patterns."""
        line = clean(line)
        if "installed eager" in line:
            self.installed += 1
        if "outcome=translated" in line:
            self.translated += 1
        if "reused tier" in line:
            self.reused += 1
        if re.search(r"translation_status=[^0\s]", line):
            self.bad_status += 1
