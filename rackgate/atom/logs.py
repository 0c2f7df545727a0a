"""Reading the server's logs on the nodes without bringing them here.

A real log runs to gigabytes: every read is a grep on the node (only the matching lines, each
with the line before it so an ATOM_LOG_MORE header travels with its message), bounded in
lines and time. Which rank wrote a line comes from rackgate.atom.logformat.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..server_access import LogLine
from ..transport import Host
from . import logformat
from .logformat import Record

MAX_MATCHES = 20000
_GREP_LINE = re.compile(r"^(\d+)([:-])(.*)$")


class LogMissing(CouldNotObserve):
    """The log the suite would read does not exist on the node."""


@dataclass
class NodeLog:
    node: str
    host: Host                # inside the container, where the log is
    path: str                 # node path of the log
    ranks: range              # the DP ranks this node runs
    rank: int | None = None   # set when this log is one rank's own (attach mode, one log per rank)
    _pids: dict[int, int] | None = field(default=None, repr=False)

    def exists(self) -> bool:
        return self.host.exists(self.path)

    def grep(self, *patterns: str, fixed: bool = True, max_matches: int = MAX_MATCHES) -> list[Record]:
        """Records whose line matches any pattern, in log order, each with its header if any."""
        pats = [w for p in patterns for w in ("-e", p)]
        # $1 the log, $2 the line bound, $3 -F/-E, then the -e PATTERN pairs
        res = self.host.shell('f="$1" n="$2" m="$3"; shift 3; if [ -e "$f" ]; then grep -a -n -B1 "$m" "$@" -- "$f" '
                              '| head -n "$n"; else echo __rackgate_nolog__; fi',
                              self.host.path(self.path), str(2 * max_matches), "-F" if fixed else "-E", *pats,
                              timeout=120)
        if res.stdout.strip() == "__rackgate_nolog__":
            raise LogMissing(f"{self.node}: no server log at {self.path}")
        out, prev = [], None
        for line in res.stdout.splitlines():
            m = _GREP_LINE.match(line)
            if not m:
                prev = None  # "--" group separator
                continue
            n, kind, text = int(m.group(1)), m.group(2), m.group(3)
            if kind == "-":
                prev = (n, text)
                continue
            parser = logformat.Parser(start=n - 1 if prev and prev[0] == n - 1 else n)
            if prev and prev[0] == n - 1:
                parser.feed(prev[1])
            rec = parser.feed(text)
            if rec is not None:
                out.append(rec)
            prev = (n, text)
        return out

    def count(self, pattern: str, fixed: bool = True) -> int:
        """`grep -c` on the node."""
        res = self.host.run(["grep", "-a", "-c", "-F" if fixed else "-E", "-e", pattern, self.host.path(self.path)],
                            timeout=120)
        # grep -c: rc 0 (matches) or 1 (none) with the count printed; rc 2 is an error (no such file).
        lines = res.stdout.strip().splitlines()
        if res.rc not in (0, 1) or not lines or not lines[-1].isdecimal():
            if not self.host.exists(self.path):
                raise LogMissing(f"{self.node}: no server log at {self.path}")
            raise LogMissing(f"{self.node}: could not count {pattern!r} in {self.path}: {res.came_back()}")
        return int(lines[-1])

    def tail(self, lines: int = 20) -> str:
        res = self.host.run(["tail", "-n", str(lines), self.host.path(self.path)], timeout=30)
        return res.stdout

    def pids(self, refresh: bool = False) -> dict[int, int]:
        """pid -> DP rank from the process titles (ATOM::DP<r>TP<t>) on the node; pids seen once
        are kept (a rank that died is still named by its earlier lines)."""
        if self._pids is None or refresh:
            res = self.host.run(["ps", "-ww", "-eo", "pid,comm,args", "--no-headers"], timeout=30)
            self._pids = {**(self._pids or {}), **logformat.pid_ranks(res.stdout)}
        return self._pids

    def rank_of(self, rec: LogLine) -> int | None:
        r = logformat.rank_of(rec)
        if r is None and self.rank is not None:
            return self.rank
        if r is None and rec.pid is not None:
            r = self.pids().get(rec.pid)
            if r is None:
                r = self.pids(refresh=True).get(rec.pid)
        return r

    def who(self, rec: LogLine) -> str:
        r = self.rank_of(rec)
        if r is not None:
            return f"{self.node}/dp{r}"
        return f"{self.node} (pid {rec.pid})" if rec.pid else self.node


def per_rank(node: str, host: Host, path: str, ranks: range) -> list[NodeLog]:
    """One NodeLog per rank when each rank writes its own log: `path` holds {rank}
    (launch.log_path = "/var/log/atom/{node}-dp{rank}.log" in attach mode)."""
    return [NodeLog(node, host, path.replace("{rank}", str(r)), range(r, r + 1), r) for r in ranks]


def rank_table(rack: Rack) -> dict[int, str]:
    """DP rank -> node name: node i runs ranks i*gpus .. i*gpus+gpus-1 (-tp 1, as launched)."""
    return {i * rack.gpus_per_node + g: n.name for i, n in enumerate(rack.nodes) for g in range(rack.gpus_per_node)}
