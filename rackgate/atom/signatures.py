"""The fatal boot signatures (catalogue row SRV-BOOT) and what each one points at.

The catalogue's signature strings and its `[[row.pattern]]` regexes (torch/HIP out of memory,
NCCL/RCCL, HSA and HIP errors) are the match set (one source of truth); the hints below add, per
signature, the cause the runbook names for it. selftest/serving checks the two agree. By structure
as well: a Python traceback's final exception line (`Traceback`), whatever the exception.

A signature is judged inside its record (rackgate.atom.dialects; the rule in docs/formats.md):
in an ERROR/CRITICAL/FATAL record, or as an uncaught traceback's final line, it is fatal; in a
WARNING/INFO/DEBUG record it is evidence (`Noted`), never fatal by its words -- if the process
then exits, that record is the one the exit verdict quotes; in a line no dialect gives a level
(ATOM's default format, a runtime's raw stderr) it is fatal unless its record says the program
went on ("; using unpinned.", "falling back", "retrying", "will use default").

`seen` is the line itself, cut around the match: never the progress-bar redraws (`\r`) that share
its physical line.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ..catalogue import row
from ..lines import clean, strip_ansi
from . import dialects
from .logformat import Record, records

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
PATTERN_HINTS: dict[str, str] = {
    "HIP/CUDA out of memory":
        "a GPU ran out of memory while booting: check PLAT-FREE (another job's memory) and the KV budget settings",
    "torch.OutOfMemoryError":
        "a GPU ran out of memory while booting: check PLAT-FREE (another job's memory) and the KV budget settings",
    "NCCL/RCCL error":
        "a collective failed while booting: run FAB-COLLECTIVE (pytest -m fabric) and read dmesg (PLAT-DMESG)",
    "HSA runtime error":
        "the ROCm runtime refused (resources, device): read dmesg (PLAT-DMESG) and check PLAT-FREE",
    "HIP error":
        "a HIP call failed: a wrong image for this GPU, or a device fault (PLAT-DMESG)",
    "PyTorch NCCL watchdog timeout":
        "a collective never completed on this rank (a peer is stuck or gone): run FAB-COLLECTIVE and read the "
        "other ranks' last lines (SRV-DEADLOCK, SRV-RENDEZVOUS)",
    "C++ terminate":
        "a C++ exception nobody caught aborted the process (its `what():` line says which): the watchdog's "
        "DistBackendError is a collective that failed or timed out",
    "Triton out of resources":
        "a Triton kernel's launch config needs more shared memory/registers than this GPU has: a kernel tuned for "
        "another GPU (image / aiter config for gfx1250)",
    "Fatal Python error":
        "the interpreter itself died (a segfault or abort in native code): the stack under it names the module; "
        "read dmesg on the node (PLAT-DMESG)",
    "ASGI startup failed":
        "the API server's startup hook raised: the traceback above it says why (the engine never got to serve)",
}
TRACEBACK = "Traceback (most recent call last):"
TRACEBACK_HINT = "the process raised an exception while booting: the traceback above it says where"
SEEN_CHARS = 300
# A traceback's final line: "ValueError: ...", "torch.OutOfMemoryError: ...", "KeyboardInterrupt"
_EXC_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)(?::|$)")


@dataclass(frozen=True)
class Fatal:
    signature: str
    hint: str
    found: str = ""   # the text that matched (to find it again in the raw line)
    rec: Record | None = None  # the line that carries it (Judge)
    level: str = ""            # its record's level ("" = the dialect gives none)
    why: str = ""              # what made it fatal: "an ERROR record", "an uncaught traceback", ...
    record: tuple[Record, ...] = ()  # the lines of its record read so far (one may name the rank)


@dataclass(frozen=True)
class Noted:
    """A signature in a record that is not fatal: evidence, said with the verdict."""
    signature: str
    rec: Record
    level: str
    outcome: str    # the recovery words the record carries ("" = none)

    def said(self) -> str:
        how = f"which says {self.outcome!r}" if self.outcome else "(not an error by its level)"
        return (f"line {self.rec.lineno}: {self.signature!r} in a {self.level or 'level-less'} record {how}: "
                f"{self.rec.text[:200]}")


def signatures() -> tuple[str, ...]:
    return row("SRV-BOOT").signatures


@functools.lru_cache(maxsize=1)
def _any() -> re.Pattern[str]:
    """One scan of the line for every signature (the watcher runs this on every line it reads)."""
    return re.compile("|".join([re.escape(s) for s in signatures()] + [f"(?:{p.regex})" for p in row("SRV-BOOT").patterns]))


# Per pattern, words every line it matches contains (each alternative of its regex holds one): a
# line with none of them (nearly every line) is passed over without running the regexes.
# selftest/serving/test_gates.py checks every pattern has them and every example carries one.
PATTERN_KEYS: dict[str, tuple[str, ...]] = {
    "HIP/CUDA out of memory": (" out of memory. Tried to allocate ",),
    "torch.OutOfMemoryError": (".OutOfMemoryError",),
    "NCCL/RCCL error": ("NCCL error in: ", "unhandled cuda error", "nccl"),
    "HSA runtime error": ("HSA_STATUS_ERROR",),
    "HIP error": ("HIP error: ", "hipError"),
    "PyTorch NCCL watchdog timeout": ("Watchdog caught collective operation timeout: ",),
    "C++ terminate": ("terminate called after throwing an instance of ",),
    "Triton out of resources": ("out of resource: ",),
    "Fatal Python error": ("Fatal Python error: ",),
    "ASGI startup failed": ("Application startup failed. Exiting.",),
}


@functools.lru_cache(maxsize=1)
def _keys() -> tuple[str, ...]:
    return tuple(signatures()) + tuple(k for p in row("SRV-BOOT").patterns for k in PATTERN_KEYS[p.name])


def match(text: str) -> Fatal | None:
    """The first fatal signature a log line carries (ANSI colour and CRs removed first), or None."""
    if "\x1b" in text or "\r" in text or "\x9b" in text:
        text = clean(text)
    if not any(k in text for k in _keys()) or _any().search(text) is None:
        return None
    for sig in signatures():
        if sig in text:
            return Fatal(sig, HINTS.get(sig, ""), sig)
    for p in row("SRV-BOOT").patterns:
        m = re.search(p.regex, text)
        if m:
            return Fatal(p.name, PATTERN_HINTS.get(p.name, ""), m.group(0))
    return None


def seen(raw: str, fatal: Fatal, limit: int = SEEN_CHARS) -> str:
    """The line as the log shows it, without ANSI and without the progress-bar redraws that share
    its physical line: the CR-separated piece that holds the match, cut around the match."""
    pieces = [p.strip() for p in strip_ansi(raw).rstrip("\r\n").split("\r") if p.strip()]
    piece = next((p for p in pieces if fatal.found and fatal.found in p), None)
    if piece is None:
        piece = clean(raw).strip()
    if len(piece) <= limit:
        return piece
    at = max(0, piece.find(fatal.found)) if fatal.found else 0
    start = max(0, min(at - limit // 3, len(piece) - limit))
    return ("…" if start else "") + piece[start:start + limit] + ("…" if start + limit < len(piece) else "")


# A record's first lines are kept for its judgment (outcome words, the line naming the rank); a
# record that runs on (an indented dump of thousands of lines) is still one record, not kept whole.
KEEP_LINES = 200
# Noted records kept per log (a WARNING repeated for every shard is counted, not kept each time).
KEEP_NOTED = 20


@dataclass
class _Open:
    """The record being read: its level, its lines' text, the signature it carries."""
    level: str
    lines: list[str]
    depth: int
    recs: list[Record] = field(default_factory=list)
    n: int = 0
    traceback: bool = False
    sig: tuple[Fatal, Record] | None = None


class Judge:
    """One log's records, fed one Record at a time: feed() returns a Fatal when one is decided
    (for a line of the record that just closed, or at once for an ERROR record or a traceback's
    final line); `noted` holds the signatures found harmless. flush() closes the open record (the
    log went quiet, or the process ended)."""

    def __init__(self) -> None:
        self.open: _Open | None = None
        self.noted: list[Noted] = []
        self.more_noted = 0  # noted beyond KEEP_NOTED

    def feed(self, rec: Record) -> Fatal | None:
        o = self.open
        f = self._feed(rec)
        if f is not None and not f.record:
            lines = o.recs if o is not None and f.rec in o.recs else []
            f = replace(f, record=tuple(lines) + ((rec,) if rec not in lines else ()))
        return f

    def _feed(self, rec: Record) -> Fatal | None:
        text = rec.text
        h = dialects.head(text, rec.level)
        o = self.open
        if h is None and o is not None and dialects.continues(text, o.depth, o.n):
            return self._line(o, rec, text)
        if o is not None and o.traceback and h is None and text and _EXC_LINE.match(text):
            self.open = None
            why = "an uncaught traceback's final line"
            f = match(text)
            if f is None and o.sig is not None:  # the signature was in a frame: `assert not ca_comm.disabled`
                f, rec = o.sig
            if f is not None:
                return Fatal(f.signature, f.hint, f.found, rec, "", why)
            return Fatal(f"Python exception: {text.split(':', 1)[0]}", TRACEBACK_HINT, text[:80], rec, "", why)
        decided = self.flush()
        body = h.body if h is not None else text
        self.open = _Open(h.level if h is not None else "", [], 0, traceback=TRACEBACK in body)
        got = self._line(self.open, rec, body)
        return decided or got

    def _line(self, o: _Open, rec: Record, text: str) -> Fatal | None:
        o.n += 1
        if o.n <= KEEP_LINES:
            o.lines.append(text)
            o.recs.append(rec)
        o.depth = dialects.depth_after(text, o.depth)
        if o.sig is None:
            f = match(text)
            if f is not None:
                o.sig = (f, rec)
                if o.level in dialects.FATAL_LEVELS:
                    self.open = None
                    return Fatal(f.signature, f.hint, f.found, rec, o.level, f"an {o.level} record")
        return None

    def flush(self) -> Fatal | None:
        """Close the open record and judge the signature it carries."""
        o, self.open = self.open, None
        if o is None or o.sig is None:
            return None
        f, rec = o.sig
        outcome = dialects.RECOVERED.search("\n".join(o.lines))
        if o.level in dialects.QUIET_LEVELS or outcome:
            if len(self.noted) < KEEP_NOTED:
                self.noted.append(Noted(f.signature, rec, o.level, outcome.group(0) if outcome else ""))
            else:
                self.more_noted += 1
            return None
        return Fatal(f.signature, f.hint, f.found, rec, o.level, "a line with no level that says nothing of "
                     "going on", tuple(o.recs))


def judge(lines: Iterable[str]) -> tuple[list[Fatal], list[Noted]]:
    """A whole log's lines judged (the fatal ones, the noted ones): what the watcher decides line
    by line, for a log read after the fact."""
    j = Judge()
    fatal = [f for rec in records(lines) if (f := j.feed(rec)) is not None]
    last = j.flush()
    return fatal + ([last] if last else []), j.noted
