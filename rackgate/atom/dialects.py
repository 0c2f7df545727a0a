"""The log dialects an engine's log mixes, read for structure: which line starts a record, at
which level, from which rank, and which lines continue it.

An ATOM node's log is one stream that ATOM's own logger, the Python libraries under it, the C++
runtimes (PyTorch's c10 logging, the HIP runtime, RCCL) and the interpreter all write to. A fatal
word means something only inside its record: `HIP error: out of memory` in a WARNING that ends
"; using unpinned." is a recovered allocation, the same words in an ERROR record or an uncaught
traceback end the process. Each dialect below is taken from its source (docs/formats.md lists
them with the files):

- ATOM_LOG_MORE header `[atom LEVEL] date time.f - proc:pid - path:line - func` (the level of the
  message lines after it: logformat.HEADER); ATOM's default `[atom HH:MM:SS] msg` has no level;
- vLLM `LEVEL mm-dd HH:MM:SS file.py:123] msg` / `LEVEL mm-dd HH:MM:SS [file.py:123] msg`,
  optionally after `(ProcName pid=N) `; a multi-line message repeats the prefix on every line;
- Python logging's BASIC_FORMAT `LEVEL:name:msg` and uvicorn's `LEVEL:` padded to 9 columns;
  `asctime - name - LEVEL - msg`;
- glog / PyTorch c10 (`[W1204 13:38:47.507 ProcessGroupNCCL.cpp:1168] ...`, bare `E1204 ...`
  from glog itself): I, W, E, F;
- NCCL / RCCL `host:pid:tid [dev] NCCL WARN|INFO|TRACE msg` (NCCL prints its errors as WARN and
  returns the code to its caller, which decides: a WARN is not fatal by itself);
- the HIP runtime's AMD_LOG_LEVEL trace `:1:file.cpp :123 : 456 us: ...` (1 error, 2 warning,
  3 info, 4 debug);
- CPython's warnings (`file.py:123: UserWarning: msg`, warnings.formatwarning): WARNING;
- torch.distributed's `[rank3]:` prefix in front of any of these (TORCH_LOGS / the elastic
  launcher's per-rank tee): it names the rank and is taken off before the rest is read.

A record continues, without a prefix of its own, where its structure says so: an unclosed
parenthesis or bracket in the message (a `%s` of an exception whose text has newlines), an
indented line (traceback frames, wrapped text), and the HIP runtime's hint block that PyTorch's
c10 error text appends to every HIP error (c10/cuda/CUDAException / hipified HIPException).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

FATAL_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL"})
QUIET_LEVELS = frozenset({"WARNING", "INFO", "DEBUG", "TRACE", "NOTICE"})

_GLOG_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
_HIP_LEVEL = {"1": "ERROR", "2": "WARNING", "3": "INFO", "4": "DEBUG"}
_LEVEL = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE"

RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?")
DIALECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # vLLM (vllm/logger.py _FORMAT, datefmt "%m-%d %H:%M:%S"), with its process prefix
    ("vllm", re.compile(r"^(?:\([^)]*\) )?(?P<level>" + _LEVEL + r") \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? "
                        r"(?:\[[^\]]*:\d+\]|\S+:\d+\]) ?")),
    # glog and PyTorch's c10 logging ("[W1204 13:38:47.507447385 ProcessGroupNCCL.cpp:1168] ...")
    ("glog", re.compile(r"^\[?(?P<level>[IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+(?:\d+\s+)?[^\s\]]+:\d+\] ?")),
    # NCCL / RCCL debug.cc: "%s:%d:%d [%d] NCCL WARN ..." (host:pid:tid [cudaDev])
    ("nccl", re.compile(r"^\S+:\d+:\d+ \[\d+\] (?:\S+ )?NCCL (?P<level>WARN|INFO|TRACE) ")),
    # HIP runtime (rocclr ClPrint under AMD_LOG_LEVEL): ":1:hip_code_object.cpp :616 : 123 us: ..."
    ("hip", re.compile(r"^:(?P<level>[1-4]):\S+\s*:\s*\d+\s*:\s*\d+\s*us:\s?"
                       r"(?:\[pid:\s*\d+\s+tid:\s*0x[0-9a-fA-F]+\]\s?)?")),
    # Python logging BASIC_FORMAT "LEVEL:name:msg" and uvicorn's padded "LEVEL:     msg"
    ("python", re.compile(r"^(?P<level>" + _LEVEL + r"):(?:[\w.]*:|\s+)")),
    # CPython's warnings.formatwarning: "%s:%s: %s: %s" (file, line, category, message): a warning
    ("warnings", re.compile(r"^\S+\.py:\d+: (?P<level>\w*Warning): ")),
    # "%(asctime)s - %(name)s - %(levelname)s - %(message)s" (the logging cookbook's format)
    ("python", re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[,.]\d+ - [\w.]+ - (?P<level>" + _LEVEL + r") - ")),
)

# The hint block PyTorch appends to every HIP/CUDA error (c10_hip_check_implementation), and the
# c10::Error backtrace under it: lines of the record they follow, never a record of their own.
HINT_LINES = re.compile(
    r"^(?:(?:HIP|CUDA) kernel errors might be asynchronously reported"
    r"|For debugging consider passing (?:AMD_SERIALIZE_KERNEL|CUDA_LAUNCH_BLOCKING)"
    r"|Compile with `TORCH_USE_(?:HIP|CUDA)_DSA` to enable device-side assertions"
    r"|Device-side assertion tracking was not enabled by user"
    r"|Search for `(?:hip|cuda)Error\w*' in "
    r"|Exception raised from \S+ at \S+ \(most recent call first\):"
    r"|frame #\d+: )")
# Outcome words: the record says the program went on without what failed. Only in a record whose
# level is not an error (an ERROR that says "retrying" is still an error).
RECOVERED = re.compile(r"\b(?:using unpinned|unpinned instead|falling back|fall(?:s|ing)? ?back to"
                       r"|fallback to|retrying|will retry|will use (?:the )?default|using (?:the )?default|continuing without)\b",
                       re.IGNORECASE)


@dataclass(frozen=True)
class Head:
    """What a line's own prefix says: its dialect, its level (normalised; "" = the dialect has no
    level), the rank a `[rankN]:` prefix names, and the message after the prefix."""
    dialect: str
    level: str
    rank: int | None
    body: str


def head(text: str, atom_level: str = "") -> Head | None:
    """The record a line starts, or None when nothing on it says it starts one (a raw line:
    continuation or unprefixed output, decided by the record reader)."""
    rank = None
    m = RANK_PREFIX.match(text)
    if m:
        rank, text = int(m.group(1)), text[m.end():]
    if atom_level:
        return Head("atom", _norm(atom_level), rank, text)
    for name, rx in _candidates(text):
        m = rx.match(text)
        if m:
            return Head(name, _norm(m["level"], name), rank, text[m.end():])
    if rank is not None:
        return Head("torch-rank", "", rank, text)
    return None


_BY_NAME = {name: [d for d in DIALECTS if d[0] == name] for name, _ in DIALECTS}
_LEVEL_START = frozenset("DIWECFT")


def _candidates(text: str) -> list[tuple[str, re.Pattern[str]]]:
    """The dialects whose prefix can start this line (by its first character): the watcher reads
    every line, most of them raw output no dialect prefixes."""
    if not text:
        return []
    if ".py:" in text and "Warning: " in text:
        return _BY_NAME["warnings"]
    c = text[0]
    if c == "(":
        return _BY_NAME["vllm"]
    if c == "[":
        return _BY_NAME["glog"]
    if c == ":":
        return _BY_NAME["hip"]
    if c in _LEVEL_START:
        return _BY_NAME["vllm"] + _BY_NAME["glog"] + _BY_NAME["python"]
    if c.isdigit():
        return _BY_NAME["python"] + (_BY_NAME["nccl"] if " NCCL " in text else [])
    return _BY_NAME["nccl"] if " NCCL " in text else []


def _norm(level: str, dialect: str = "") -> str:
    if dialect == "warnings":
        return "WARNING"
    if dialect == "glog":
        return _GLOG_LEVEL[level]
    if dialect == "hip":
        return _HIP_LEVEL[level]
    level = level.upper()
    return "WARNING" if level == "WARN" else level


def depth_after(text: str, depth: int = 0) -> int:
    """The brackets a record leaves open after this line (its text continues on the next lines)."""
    if not depth and "(" not in text and "[" not in text and "{" not in text:
        return 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}" and depth:
            depth -= 1
    return depth


# An open bracket carries a record over at most this many lines (the HIP hint block is five): a
# message that never closes its bracket must not swallow the lines after it.
MAX_BRACKET_LINES = 12


def continues(text: str, depth: int, lines: int = 0) -> bool:
    """Whether a line without a prefix of its own belongs to the open record (of `lines` lines
    so far, `depth` brackets open)."""
    if bool(text) and text[0] in " \t" or HINT_LINES.match(text) is not None:
        return True
    return depth > 0 and lines < MAX_BRACKET_LINES and not text.startswith("Traceback (most recent call last)")
