"""Profiler traces on the nodes: which ranks' trace directories hold a non-empty
`*.pt.trace.json.gz` (SRV-PROFILE), polled until all do or the wait is over (bounded)."""
from __future__ import annotations

import time

from ..access import NodeAccess

TRACE_GLOB = "*.pt.trace.json.gz"


def missing_traces(want: dict[int, tuple[NodeAccess, str]], wait_s: float, poll_s: float = 0.5) -> dict[int, str]:
    """want: rank -> (the node's NodeAccess, its trace directory). Returns the ranks (-> directory)
    with no non-empty trace after wait_s (empty: every rank wrote one)."""
    deadline = time.monotonic() + wait_s
    while True:
        missing: dict[int, str] = {}
        for r, (host, d) in want.items():
            res = host.shell('find "$1" -maxdepth 1 -name "$2" -size +0c 2>/dev/null | head -n 1', host.path(d),
                             TRACE_GLOB, timeout=30)
            if not res.stdout.strip():
                missing[r] = d
        if not missing or time.monotonic() >= deadline:
            return missing
        time.sleep(poll_s)
