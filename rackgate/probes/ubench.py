"""ubench07 (07_ualoe): ualoe_p2p.exe / ualoe_bw.exe output and leftover processes -> facts.

What is known of the output (the runbook; the tools are AMD-internal):
- both sides of a healthy ualoe_p2p run print `RESULT OK: 1/1 pairs PASS` (N/N with every GPU);
- a failing HIP call prints `[FATAL] <file>:<line> <call> -> <hipGetErrorString>` and exits,
  e.g. `[FATAL] ualoe_p2p.cpp:49 hipMemSetAccess(...) -> invalid argument` (line 49 is in the
  import path);
- a fabric fault often prints nothing at all: the tool sits (no RESULT line);
- ualoe_bw's `connect` side prints a table of read / write / bidirectional GB/s (decimal),
  one row per transfer size; the largest transfer is the figure to judge.
The bw table's exact layout is not public, so the layouts are configuration
(fabric.bw_patterns in the rack file: direction -> a regex whose first group is the GB/s figure;
the last match counts) tried before the built-in variants:
- "table": a header line naming the three directions (read, write, bidir/bidirectional, any
  order) and numeric rows under it (the largest transfer last);
- "two-column": `read 2029.4` / `read: 2029.4 GB/s` rows, one direction per row, or a direction
  heading (`Read:` / `== read ==`) over `size value` rows;
- "labelled": `Read BW (GB/s): 2029.4` (any label words between the direction and the colon).
Nothing recognised is could-not-observe naming fabric.bw_patterns (judge.bandwidth), not a verdict.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import UnrecognisedOutput
from ..lines import split_lines

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
    verdict: str | None = None  # the word after RESULT (OK)
    word: str | None = None     # the word after "pairs" (PASS)

    @property
    def ok(self) -> bool:
        """Healthy only as the runbook prints it: RESULT OK: N/N pairs PASS, no [FATAL]."""
        return (self.result is not None and self.fatal is None and self.passed == self.total
                and bool(self.total) and self.verdict == "OK" and self.word == "PASS")


def parse_p2p(text: str) -> P2pOutcome:
    result = passed = total = fatal = ffile = fline = verdict = word = None
    for line in split_lines(text):
        m = RESULT_RE.search(line)
        if m and result is None and len(m.group("passed")) < 7 and len(m.group("total")) < 7:
            result, passed, total = line.strip(), int(m.group("passed")), int(m.group("total"))
            verdict, word = m.group("verdict"), m.group("word")
        f = FATAL_RE.search(line)
        if f and fatal is None:
            fatal, ffile, fline = line.strip(), f.group("file"), int(f.group("line"))
    return P2pOutcome(result, passed, total, fatal, ffile, fline, verdict, word)


@dataclass(frozen=True)
class BwTable:
    rows: list[tuple[str, dict[str, float]]]  # (size label, {read, write, bidir})
    fatal: str | None
    layout: str = ""  # which layout matched: "rack file", "table", "two-column", "labelled", "" (none)

    @property
    def final(self) -> dict[str, float] | None:
        """The largest transfer's figures (the last complete row)."""
        for _, vals in reversed(self.rows):
            if set(vals) >= {"read", "write", "bidir"}:
                return vals
        return None


def _num(tok: str) -> float | None:
    try:
        v = float(tok.replace(",", ""))
    except ValueError:
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) and v >= 0 else None


class BwPatternError(UnrecognisedOutput, ValueError):
    """A fabric.bw_patterns regex that does not compile or has no group."""


def _rack_patterns(patterns: dict[str, str] | None, lines: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for d, rx in (patterns or {}).items():
        try:
            c = re.compile(rx)
        except re.error as e:
            raise BwPatternError(f"fabric.bw_patterns[{d!r}] = {rx!r} is not a regex: {e}") from None
        if c.groups < 1:
            raise BwPatternError(f"fabric.bw_patterns[{d!r}] = {rx!r} has no group for the GB/s figure")
        for line in lines:
            m = c.search(line)
            if m and (num := _num(m.group(1) or "")) is not None:
                out[DIRS.get(d.lower(), d.lower())] = num
    return out


_LABELLED = re.compile(r"^\s*(read|write|bidir\w*|bi-dir)\b[^:=\d]*[:=]\s*([\d.,]+)\s*(?:gb/s)?\s*$")
_SECTION = re.compile(r"^\W*(read|write|bidir\w*|bi-dir)\b[\w ()/]*?\W*$")


def parse_bw(text: str, patterns: dict[str, str] | None = None) -> BwTable:
    """ualoe_bw output -> the figures. `patterns` (fabric.bw_patterns) is tried first, then the
    built-in layouts; BwTable.final is None when nothing matched."""
    lines = split_lines(text)
    fatal = next((ln.strip() for ln in lines if FATAL_RE.search(ln)), None)
    own = _rack_patterns(patterns, lines)
    if set(own) >= {"read", "write", "bidir"}:
        return BwTable([("", own)], fatal, "rack file")
    rows: list[tuple[str, dict[str, float]]] = []
    cols: list[str | None] | None = None
    kv: dict[str, float] = {}
    section: str | None = None
    sections: dict[str, float] = {}
    for line in lines:
        low = line.lower()
        toks = re.split(r"[\s|]+", low.strip())
        named = [DIRS.get(t.strip(":()")) for t in toks]
        if sum(1 for n in named if n) >= 3 and len({n for n in named if n}) == 3:
            cols = named  # a header: remember which column is which direction
            section = None
            continue
        m = re.match(r"^\s*(read|write|bidir\w*|bi-dir)\s*[:=]?\s*([\d.,]+)\s*(gb/s)?\s*$", low) or _LABELLED.match(low)
        if m and DIRS.get(m.group(1)) and (num := _num(m.group(2))) is not None:
            kv[DIRS[m.group(1)]] = num
            section = None
            continue
        m = _SECTION.match(low)
        if m and DIRS.get(m.group(1)):
            section = DIRS[m.group(1)]
            continue
        if section is not None:
            raw = re.split(r"[\s|]+", line.strip())
            if len(raw) == 2 and (num := _num(raw[1])) is not None:
                sections[section] = num  # size, GB/s: the last (largest) row counts
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
    layout = "table" if rows else ""
    for extra, name in ((kv, "labelled"), (sections, "two-column")):
        if set(extra) >= {"read", "write", "bidir"}:
            rows.append(("", extra))
            layout = layout or name
    if own:
        rows.append(("", own))
    return BwTable(rows, fatal, layout)


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
        if len(parts) < 2 or not parts[0].isdecimal():
            continue
        pgid = None
        if len(parts) >= 3 and parts[1].isdecimal():
            pgid, parts = int(parts[1]), [parts[0], *parts[2:]]
        exe = os.path.basename(parts[1])
        if exe in EXES:
            out.append(UbenchProc(int(parts[0]), exe, " ".join(parts[1:]), pgid))
    return out
