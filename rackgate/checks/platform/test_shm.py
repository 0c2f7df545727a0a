"""PLAT-SHM: no shared-memory segments left by a crashed run before launch."""
import pytest

from rackgate.probes import shm
from rackgate.report.verdict import check


@pytest.mark.row("PLAT-SHM")
def test_no_stale_segments(node, rack, evidence):
    segs = shm.segments(node.host, rack.platform.shm_globs)
    evidence.attach("/dev/shm segments", "\n".join(f"{s.path} {s.size} B mtime {s.mtime}" for s in segs) or "(none)")
    check(not segs, "PLAT-SHM", node.name,
          f"{len(segs)} stale segment(s): " + ", ".join(f"{s.path} ({s.size} B)" for s in segs[:6])
          + (f" (+{len(segs) - 6} more)" if len(segs) > 6 else ""))
