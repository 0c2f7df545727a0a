"""The facts ATOM's log lines give, as types, and their parsers against ATOM's own format strings
(judged by rackgate/gates/serverlogs.py; rackgate/atom/logfacts.py gives them to the layers above
under its old name): the `Memory budget:` figures, the KV budget error, the expert count, the KV
usage, `_sync_dp_state failed`, the hotswap hook's counts (the formats: the list below), and a
value of the `Engine kwargs:` repr that is not a Python literal; and the `Engine kwargs:` line's parser
(ATOM's model_engine/arg_utils.py `_get_engine_kwargs()` logs "Engine kwargs: {kwargs}", a dict repr
whose values may be objects -- CompilationConfig(...), <CUDAGraphMode.FULL: 2> -- that are not Python
literals), which SRV-ENGINE-ARGS' and ACC-FAKE-EPLB's probes read every node's log with.

- model_runner.py get_num_blocks():
  "Memory budget: total_gpu={:.2f}GB, free={:.2f}GB, utilization={}, budget={:.2f}GB,
   peak_torch={:.2f}GB, non_torch={:.2f}GB, cudagraph_est={:.2f}GB, safety={:.2f}GB,
   available_for_kv={:.2f}GB, block_bytes={}, num_kvcache_blocks={}"
- arg_utils.py _get_engine_kwargs(): "Engine kwargs: {kwargs}" (engine_kwargs, above) -- values may be
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

import ast
import re
import warnings
from dataclasses import dataclass
from typing import overload

from ..errors import UnrecognisedOutput
from ..lines import clean

ENGINE_KWARGS = "Engine kwargs: "


@dataclass(frozen=True)
class MemoryBudget:
    total_gpu: float | None
    utilization: float | None
    budget: float | None
    peak_torch: float | None
    cudagraph_est: float | None
    available_for_kv: float
    num_kvcache_blocks: int | None
    line: str


@dataclass(frozen=True)
class KvError:
    reserved_gb: float
    slots: int
    available_gb: float
    utilization: float | None
    line: str = ""


class Unparsed(str):
    """A value of the kwargs repr that is not a Python literal (an object's repr), kept as text."""

    def __repr__(self) -> str:
        return f"Unparsed({str(self)!r})"


class KwargsError(UnrecognisedOutput, ValueError):
    """The `Engine kwargs:` message is not a dict repr this parser can read."""


def engine_kwargs(message: str) -> dict[object, object]:
    """The dict of an `Engine kwargs: {...}` message. Literal values are evaluated with
    ast.literal_eval; anything else (CompilationConfig(...), <CUDAGraphMode.FULL: 2>) is kept as
    Unparsed text. Nothing is ever executed."""
    i = message.find(ENGINE_KWARGS)
    if i < 0:
        raise KwargsError("no 'Engine kwargs:' in the line")
    text = message[i + len(ENGINE_KWARGS):].strip()
    # Object reprs such as <CUDAGraphMode.FULL: 2> are not Python syntax: quote them first.
    text = _quote_angle_reprs(text)
    try:
        with warnings.catch_warnings():  # a log's stray backslashes must not warn in the test run
            warnings.simplefilter("ignore")
            tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise KwargsError(f"the kwargs repr does not parse ({e.msg} at column {e.offset})") from None
    except (ValueError, RecursionError, MemoryError) as e:  # NUL bytes, absurd nesting
        raise KwargsError(f"the kwargs repr does not parse ({type(e).__name__})") from None
    if not isinstance(tree.body, ast.Dict):
        raise KwargsError("the kwargs repr is not a dict")
    out: dict[object, object] = {}
    for k, v in zip(tree.body.keys, tree.body.values):
        if k is None:
            continue
        try:
            key = ast.literal_eval(k)
            hash(key)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            key = ast.get_source_segment(text, k)
        try:
            out[key] = ast.literal_eval(v)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[key] = Unparsed(_unquote_angle_reprs(ast.get_source_segment(text, v) or ""))
    return out


_ANGLE = re.compile(r"<([A-Za-z_][\w.]*(?:: [^<>]*)?)>")
_ANGLE_MARK = "__angle__"


def _quote_angle_reprs(text: str) -> str:
    return _ANGLE.sub(lambda m: repr(_ANGLE_MARK + m.group(1)), text)


def _unquote_angle_reprs(text: str) -> str:
    return re.sub(r"'" + _ANGLE_MARK + r"([^']*)'", r"<\1>", text)


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
