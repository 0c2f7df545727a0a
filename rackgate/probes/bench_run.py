"""Run the rack file's benchmark command once on the head node and find what it wrote: the
command's Result, the result file's text (None when there is none) and whether this run wrote it.
The judging is in rackgate.gates.bench and rackgate.probes.bench."""
from __future__ import annotations

from . import bench as probe


def run(head, cmd: str, result_path: str, timeout: float):
    """(Result, result text or None, fresh: the file is newer than the run's start; None when no
    result_path is configured). The command is the rack file's shell line, run as one."""
    start = head.now()
    res = head.run(cmd, timeout=timeout)
    path, text, fresh = result_path, None, None
    if path:
        if probe.command(cmd).tool == "aiperf" and not path.endswith(".json"):
            found = head.find(path, "profile_export_aiperf.json", newer_than=start) if start else []
            path = found[0] if found else path
        mtime = head.mtime(path)
        if mtime is not None:
            text = head.read(path)
            fresh = start is not None and mtime >= start
        else:
            fresh = False
    return res, text, fresh
