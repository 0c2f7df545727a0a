"""Run the rack file's benchmark command once on the head node and find what it wrote: the
command's Result, the result file's text (None when there is none) and whether this run wrote it.
The judging is in rackgate.gates.bench and rackgate.probes.bench."""
from __future__ import annotations

import shlex

from ..access import NodeAccess, Result
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
