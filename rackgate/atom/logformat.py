"""ATOM's log line format, and which DP rank wrote a line.

ATOM logs through one logger named "atom" (atom/utils/__init__.py getLogger):

- default:        "[%(name)s %(asctime)s] %(message)s", datefmt "%H:%M:%S"
                  -> "[atom 13:38:47] Engine Core: _sync_dp_state failed: ..."
- ATOM_LOG_MORE=1: "[%(name)s %(levelname)s] %(asctime)s.%(msecs)01d - %(processName)s:%(process)d
                  - %(pathname)s:%(lineno)d - %(funcName)s\\n%(message)s"
                  -> a header line naming the process, then the message on the next line.

A node runs one ATOM process; its DP ranks are child processes that share its stdout, so a
node's log holds all of its ranks. The default format says nothing about the rank; the
ATOM_LOG_MORE header names the process: "EngineCore-DP<r>" for an engine core (multiprocessing
name, engine_core_mgr.launch_engine_core) and "ModelRunner<i>/<n>" for a runner, whose pid maps
to its rank through its process title "ATOM::DP<r>TP<t>" (async_proc.py set_process_title).
Lines written outside the logger (RCCL, the hotswap hook, tracebacks on stderr) carry no
prefix at all.

Other forms recognised (docs/formats.md lists each with its source):
- the runbook's quoted lines drop the logger name: "[13:38:47] Engine Core: _sync_dp_state failed: ..."
  and "[13:08:38] Engine 011: prompt throughput: ..., KV usage: 98.6%" (a message naming its rank);
- the engine core logs f"{self.label}: ..." with label "Engine Core" (no rank in it);
- a process name as a line prefix, before or after the timestamp: "EngineCore-DP3 ...",
  "(EngineCore_DP3 pid=4242) ...", "EngineCore-DP3:4242: ...";
- "[MORI-V2] Created MegaMoE: ep_rank=%d ep_size=%d ..." names its EP rank, which is the DP rank at
  -tp 1 (as the suite launches);
- one log per rank (attach mode): every line of it is that rank's (NodeLog.rank).
ANSI colour and carriage returns are removed first (rackgate.lines), as for every matcher.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from ..lines import clean, clean_text
from ..server_access import LogLine

# "[atom 13:38:47] message", and the runbook's "[13:38:47] message"
PLAIN = re.compile(r"^\[(?:(?P<name>[\w.]+) )?(?P<time>\d{2}:\d{2}:\d{2})(?:[.,]\d+)?\] ?(?P<msg>.*)$")
# A process name as a line prefix: "EngineCore-DP3 ...", "(EngineCore_DP3 pid=4242) ...", "EngineCore-DP3:4242: ..."
PROC_PREFIX = re.compile(r"^[(\[]?(?P<proc>EngineCore[-_]DP\d+|ModelRunner\d+/\d+)(?:(?::| pid=)(?P<pid>\d+))?"
                         r"[)\]]?:?(?:\s+(?P<rest>.*))?$")
# "[atom INFO] 2026-09-24 13:38:47.1 - EngineCore-DP11:4242 - /app/ATOM/atom/x.py:711 - fn"
HEADER = re.compile(r"^\[(?P<name>[\w.]+) (?P<level>[A-Z]+)\] (?P<date>\d{4}-\d{2}-\d{2}) "
                    r"(?P<time>\d{2}:\d{2}:\d{2})\.\d+ - (?P<proc>.+?):(?P<pid>\d+) - "
                    r"(?P<path>.+?):(?P<lineno>\d+) - (?P<func>\S+)\s*$")
RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?")
ENGINE_PROC = re.compile(r"EngineCore[-_]DP(\d+)")
TITLE = re.compile(r"ATOM::(?:DP(\d+)TP\d+|EngineCore_DP(\d+))")
# Messages that name their rank themselves ("Engine 011: prompt throughput ..." on the
# runbook's image; "... DP rank 5 ..." from the core manager).
# "[MORI-V2] Created MegaMoE: ep_rank=5 ep_size=16 ..." (EP rank = DP rank at -tp 1).
# torch.distributed's "[rank3]:" line prefix and ProcessGroupNCCL's "[Rank 3]" /
# "[PG ID 0 PG GUID 0(default_pg) Rank 3]" (its global rank: the DP rank at -tp 1).
MSG_RANK = (re.compile(r"\[(?:PG ID \d+ PG GUID \S+ )?Rank (\d+)\]"),
            re.compile(r"(?:^|\] |: )Engine (\d{1,4}):"), re.compile(r"\bDP rank (\d+)\b"), re.compile(r"\(DP (\d+)\)"),
            re.compile(r"\bCreated MegaMoE: ep_rank=(\d+)\b"), RANK_PREFIX)


@dataclass(frozen=True)
class Record:
    """One line of a node's log, with what is known about who wrote it."""
    lineno: int            # 1-based line number in the node's log
    text: str              # the message (or the raw line when it has no ATOM prefix)
    raw: str               # the line as written
    time: str = ""         # HH:MM:SS when the line is ATOM's
    process: str = ""      # processName from an ATOM_LOG_MORE header
    pid: int | None = None
    level: str = ""

    @property
    def is_atom(self) -> bool:
        return bool(self.time)


class Parser:
    """Incremental: feed() one physical line at a time, get a Record (or None for a header,
    whose message arrives on the next line). Holds nothing but the pending header."""

    def __init__(self, start: int = 1):
        self.lineno = start - 1
        self.header: re.Match[str] | None = None

    def feed(self, line: str) -> Record | None:
        self.lineno += 1
        line = clean(line)
        if not line:
            return None
        # torch.distributed's "[rank3]:" in front of any line (torchrun's per-rank prefix): read the
        # rest as it stands, and keep the prefix on the record's text (it names the rank)
        ranked = RANK_PREFIX.match(line) if line.startswith("[rank") else None
        if ranked is None:
            return self._feed(line, line)
        rec = self._feed(line[ranked.end():], line)
        if rec is None or rec.text.startswith(ranked.group(0)):
            return rec
        return Record(rec.lineno, ranked.group(0) + rec.text, rec.raw, rec.time, rec.process, rec.pid, rec.level)

    def _feed(self, line: str, raw: str) -> Record | None:
        if not line:
            return None
        m = HEADER.match(line) if line[0] == "[" else None
        if m:
            self.header = m
            return None
        if self.header is not None:
            h, self.header = self.header, None
            return Record(self.lineno, line, raw, h["time"], h["proc"], int(h["pid"]), h["level"])
        if line[0] not in _MAY_START:  # no ATOM prefix can start here: a raw line (the common case)
            return Record(self.lineno, line, raw)
        proc, pid, rest = _prefix(line)
        m = PLAIN.match(rest)
        if m:
            proc2, pid2, msg = _prefix(m["msg"])
            return Record(self.lineno, msg, raw, m["time"], proc or proc2, pid if pid is not None else pid2)
        return Record(self.lineno, rest, raw, "", proc, pid)


_MAY_START = frozenset("[(EM")  # PLAIN / HEADER start with "[", PROC_PREFIX with "(", "[", "E", "M"


def _prefix(text: str) -> tuple[str, int | None, str]:
    """(process name, pid, the rest) of a line that starts with a process name; ("", None, text) else."""
    m = PROC_PREFIX.match(text)
    if not m:
        return "", None, text
    return m["proc"], (int(m["pid"]) if m["pid"] else None), m["rest"] or ""


def records(lines: Iterable[str], start: int = 1) -> Iterator[Record]:
    """Turn log lines (a stream: nothing is held but the pending header) into Records.
    tqdm's carriage returns are line breaks here, as `tr '\\r' '\\n'` would make them."""
    p = Parser(start)
    for chunk in lines:
        for line in clean_text(chunk).split("\n"):
            rec = p.feed(line)
            if rec is not None:
                yield rec


def pid_ranks(ps_output: str) -> dict[int, int]:
    """`ps -eo pid,comm,args` -> {pid: dp rank} for ATOM's titled processes."""
    out = {}
    for line in ps_output.splitlines():
        parts = line.split(None, 1)
        if len(parts) < 2 or not parts[0].isdecimal():
            continue
        m = TITLE.search(parts[1])
        if m:
            out[int(parts[0])] = int(m.group(1) or m.group(2))
    return out


def rank_of(rec: LogLine, pids: dict[int, int] | None = None) -> int | None:
    """The DP rank that wrote a record, when the record says so; None when it does not."""
    m = ENGINE_PROC.search(rec.process)
    if m:
        return int(m.group(1))
    if rec.pid is not None and pids and rec.pid in pids:
        return pids[rec.pid]
    for rx in MSG_RANK:
        m = rx.search(rec.text)
        if m:
            return int(m.group(1))
    return None


def who(rec: LogLine, node: str, pids: dict[int, int] | None = None) -> str:
    """'node2/dp5', or 'node2 (pid 4242)' / 'node2' when the rank is not known."""
    r = rank_of(rec, pids)
    if r is not None:
        return f"{node}/dp{r}"
    return f"{node} (pid {rec.pid})" if rec.pid else node
