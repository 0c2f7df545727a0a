"""The BENCH rows' probes ("server" scope: rackgate/gates/declare.py), reading through the server
object (rackgate/server_access.py `ServerAccess`): the rack file's benchmark command aimed at the server
under test (its URL, its served name), read before it runs (`preflight`), and run once per session
on the head node, inside the container (`session_run`: BENCH-RESULT and BENCH-AGGREGATE name this one
probe, so the items read its one run), with what it wrote: the command's output, the result file's
text (None when there is none), whether this run wrote it, and the client's own figures parsed.
The judging is in rackgate.gates.bench."""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from urllib.parse import urlparse

from ..access import NodeAccess, Result
from ..errors import CouldNotObserve
from ..server_access import ServerAccess
from . import bench as probe

PLACEHOLDERS = ("head_ip", "port", "served_model", "result_path")


def fill(template: str, values: dict[str, object]) -> str:
    """The rack file's benchmark command line with our placeholders filled in, each value one
    shell word (quoted when it needs it); any other braces (a JSON argument) stay as they are."""
    cmd = template
    for k in PLACEHOLDERS:
        cmd = cmd.replace("{" + k + "}", shlex.quote(str(values[k])))
    return cmd


def readable_dir(head: NodeAccess, path: str) -> bool:
    """The path is a directory the node can read (a --tokenizer given as a path)."""
    return head.shell('[ -d "$1" ] && [ -r "$1" ]', head.path(path), timeout=30).ok


def run(head: NodeAccess, cmd: str, result_path: str, timeout: float) -> tuple[Result, str | None, bool | None]:
    """(Result, result text or None, fresh: the file is newer than the run's start; None when no
    result_path is configured). The command is the rack file's shell line, run as one."""
    start = head.now()
    res = head.shell(cmd, timeout=timeout)  # the rack file's command line, a shell line by design
    path = result_path
    text: str | None = None
    fresh: bool | None = None
    if path:
        if probe.command(cmd).tool == "aiperf" and not path.endswith(".json"):
            found = head.find(path, "profile_export_aiperf.json", newer_than=start) if start else []
            if not found:  # aiperf writes no export at all when every request failed
                return res, None, False
            path = found[0]
        mtime = head.mtime(path)
        if mtime is not None:
            text = head.read(path)
            fresh = start is not None and mtime >= start
        else:
            fresh = False
    return res, text, fresh


# --- the BENCH rows' probes, through the server object --------------------------------------------
def aimed(s: ServerAccess) -> str:
    """The rack file's benchmark command aimed at the server under test (the attached one too)."""
    url = urlparse(s.url)
    rack = s.rack
    return fill(rack.bench.command, {"head_ip": url.hostname, "port": url.port or 80,
                                     "served_model": s.client.model, "result_path": rack.bench.result_path})


def parsed(line: str) -> probe.BenchCommand:
    try:
        return probe.command(line)
    except probe.BenchParseError as e:
        raise CouldNotObserve(f"bench.command: {e}") from None


@dataclass(frozen=True)
class Preflight:
    """The benchmark command as it will run, and what the server serves (BENCH-PREFLIGHT)."""
    cmd: probe.BenchCommand
    line: str                        # the command line, filled in (evidence)
    served: tuple[str, ...]          # what /v1/models lists
    tokenizer_is_dir: bool | None    # a --tokenizer path is a readable directory on the head (None: not a path)


def preflight(s: ServerAccess) -> Preflight:
    line = aimed(s)
    cmd = parsed(line)
    tok: bool | None = None
    if cmd.tokenizer and cmd.tokenizer.startswith(("/", ".", "~")):
        tok = readable_dir(s.head(), cmd.tokenizer)
    return Preflight(cmd, line, tuple(s.client.model_ids()), tok)


@dataclass(frozen=True)
class BenchRun:
    """The session's one benchmark run (BENCH-RESULT, BENCH-AGGREGATE)."""
    cmd: probe.BenchCommand
    line: str                        # the command line, filled in
    rc: int
    stdout: str
    stderr: str
    output: str                      # the command's Result as evidence
    result: str | None               # the result file's text (None: none written or found)
    fresh: bool | None               # written by this run (None: no result_path configured)
    result_path: str                 # the rack file's bench.result_path ('' when none)
    gpu_count: int                   # the rack's real GPU count (what per-GPU figures divide by)
    facts: probe.BenchFacts | None   # the client's own figures (None: its output could not be read)
    unread: str = ""                 # why not, one line


def session_run(s: ServerAccess) -> BenchRun:
    """Run the benchmark once on the head node. Not run while a DP rank is known not to answer
    (SRV-ALIVE FAILED there: its requests would hang until the bench timeout)."""
    dead = s.dead_ranks()
    if dead is not None:
        raise dead
    rack = s.rack
    line = aimed(s)
    cmd = parsed(line)
    res, text, fresh = run(s.head(), line, rack.bench.result_path, rack.serving.bench.timeout_s)
    facts, unread = None, ""
    try:
        if cmd.tool == "aiperf":
            if text is None:
                raise probe.BenchParseError("no profile_export_aiperf.json was written")
            facts = probe.aiperf_result(text, res.stdout + res.stderr)
        else:
            facts = probe.serving_result(res.stdout + "\n" + res.stderr, text,
                                         cmd.tool if cmd.tool in probe.SERVING_TABLE_CLIENTS else "benchmark_serving")
    except probe.BenchParseError as e:
        unread = (f"{cmd.tool} output: {e} (exit {res.rc}; last output: "
                  f"{(res.stdout + res.stderr).strip()[-200:]!r})")
    return BenchRun(cmd, line, res.rc, res.stdout, res.stderr, res.evidence(), text, fresh, rack.bench.result_path,
                    rack.gpu_count, facts, unread)
