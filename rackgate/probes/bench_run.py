"""Run the rack file's benchmark command once on the head node and find what it wrote: the
command's Result, the result file's text (None when there is none) and whether this run wrote it.
The judging is in rackgate.gates.bench and rackgate.probes.bench."""
from __future__ import annotations

from . import bench as probe


def run(head, cmd: str, result_path: str, timeout: float):
    """(Result, result text or None, fresh: the file is newer than the run's start; None when no
    result_path is configured)."""
    start = head.run("date +%s", timeout=30).stdout.strip()
    res = head.run(cmd, timeout=timeout)
    path, text, fresh = result_path, None, None
    if path:
        if probe.command(cmd).tool == "aiperf" and not path.endswith(".json"):
            found = head.run(f"find {head.qpath(path)} -name profile_export_aiperf.json -newermt @{start} "
                             f"2>/dev/null | head -n 1", timeout=30).stdout.strip()
            path = found[len(head.sysroot):] if found and head.sysroot else found or path
        mtime = head.run(f"stat -c %Y {head.qpath(path)} 2>/dev/null", timeout=30).stdout.strip()
        if mtime.isdigit():
            text = head.read(path)
            fresh = start.isdigit() and int(mtime) >= int(start)
        else:
            fresh = False
    return res, text, fresh
