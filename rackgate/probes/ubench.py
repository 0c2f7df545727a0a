"""ubench07 (07_ualoe): ualoe_p2p.exe / ualoe_bw.exe output and leftover processes -> facts.

What is known of the output (the runbook; the tools are AMD-internal):
- both sides of a healthy ualoe_p2p run print `RESULT OK: 1/1 pairs PASS` (N/N with every GPU);
- a failing HIP call prints `[FATAL] <file>:<line> <call> -> <hipGetErrorString>` and exits,
  e.g. `[FATAL] ualoe_p2p.cpp:49 hipMemSetAccess(...) -> invalid argument` (line 49 is in the
  import path);
- a fabric fault often prints nothing at all: the tool sits (no RESULT line);
- ualoe_bw's `connect` side prints a table of read / write / bidirectional GB/s (decimal),
  one row per transfer size; the largest transfer is the figure to judge.
The bw table's exact layout is not public: the parser finds the header line that names the three
directions (read, write, bidir/bidirectional, in any order) and reads the numeric rows under it;
`read: 2029.4 GB/s`-style lines are accepted too.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

EXES = ("ualoe_p2p.exe", "ualoe_bw.exe")
RESULT_RE = re.compile(r"RESULT\s+(?P<verdict>\w+):\s*(?P<passed>\d+)\s*/\s*(?P<total>\d+)\s+pairs?\s+(?P<word>\w+)")
FATAL_RE = re.compile(r"\[FATAL\]\s+(?P<file>[\w.]+):(?P<line>\d+)\s+(?P<call>.+?)\s+->\s+(?P<error>.+?)\s*$")
DIRS = {"read": "read", "write": "write", "bidir": "bidir", "bidirectional": "bidir", "bi-dir": "bidir"}


@dataclass(frozen=True)
class P2pOutcome:
    result: str | None  # the RESULT line, or None when the tool printed none
    passed: int | None
    total: int | None
    fatal: str | None  # the first [FATAL] line
    fatal_file: str | None = None
    fatal_line: int | None = None

    @property
    def ok(self) -> bool:
        return (self.result is not None and self.fatal is None and self.passed == self.total
                and bool(self.total) and self.result.split(":")[0].split()[-1] == "OK")


def parse_p2p(text: str) -> P2pOutcome:
    result = passed = total = fatal = ffile = fline = None
    for line in text.splitlines():
        m = RESULT_RE.search(line)
        if m and result is None:
            result, passed, total = line.strip(), int(m.group("passed")), int(m.group("total"))
        f = FATAL_RE.search(line)
        if f and fatal is None:
            fatal, ffile, fline = line.strip(), f.group("file"), int(f.group("line"))
    return P2pOutcome(result, passed, total, fatal, ffile, fline)


@dataclass(frozen=True)
class BwTable:
    rows: list[tuple[str, dict[str, float]]]  # (size label, {read, write, bidir})
    fatal: str | None

    @property
    def final(self) -> dict[str, float] | None:
        """The largest transfer's figures (the last complete row)."""
        for _, vals in reversed(self.rows):
            if set(vals) >= {"read", "write", "bidir"}:
                return vals
        return None


def _num(tok: str) -> float | None:
    try:
        return float(tok.replace(",", ""))
    except ValueError:
        return None


def parse_bw(text: str) -> BwTable:
    rows: list[tuple[str, dict[str, float]]] = []
    cols: list[str | None] | None = None
    kv: dict[str, float] = {}
    fatal = None
    for line in text.splitlines():
        if fatal is None and FATAL_RE.search(line):
            fatal = line.strip()
        low = line.lower()
        toks = re.split(r"[\s|]+", low.strip())
        named = [DIRS.get(t.strip(":()")) for t in toks]
        if sum(1 for n in named if n) >= 3 and len({n for n in named if n}) == 3:
            cols = named  # a header: remember which column is which direction
            continue
        m = re.match(r"^\s*(read|write|bidir\w*|bi-dir)\s*[:=]?\s*([\d.,]+)\s*(gb/s)?", low)
        if m and DIRS.get(m.group(1)) and _num(m.group(2)) is not None:
            kv[DIRS[m.group(1)]] = _num(m.group(2))
            continue
        if cols is None:
            continue
        raw = re.split(r"[\s|]+", line.strip())
        if len(raw) < 2:
            continue
        vals = {}
        # Numbers right-aligned under the header's direction columns; the first column may be a size.
        nums = [(i, _num(t)) for i, t in enumerate(raw)]
        numeric = [v for _, v in nums if v is not None]
        dir_cols = [n for n in cols if n]
        if len(numeric) >= len(dir_cols):
            for name, v in zip(dir_cols, numeric[-len(dir_cols):]):
                vals[name] = v
            size = raw[0] if _num(raw[0]) is None else ""
            rows.append((size, vals))
    if kv:
        rows.append(("", kv))
    return BwTable(rows, fatal)


@dataclass(frozen=True)
class UbenchProc:
    pid: int
    exe: str  # ualoe_p2p.exe or ualoe_bw.exe
    args: str  # the whole command line
    pgid: int | None = None

    @property
    def kill_command(self) -> str:
        return f"kill {self.pid}"


def parse_ps(text: str) -> list[UbenchProc]:
    """`ps -eo pid,args` or `ps -eo pid,pgid,args` -> the ubench07 processes. The executable (the
    first word of args) must BE ualoe_p2p.exe or ualoe_bw.exe (any folder): a shell or an editor
    whose command line merely mentions the name never matches (the runbook's reason not to use
    `pkill -f ualoe`: it matches your own shell)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        pgid = None
        if len(parts) >= 3 and parts[1].isdigit():
            pgid, parts = int(parts[1]), [parts[0], *parts[2:]]
        exe = os.path.basename(parts[1])
        if exe in EXES:
            out.append(UbenchProc(int(parts[0]), exe, " ".join(parts[1:]), pgid))
    return out
