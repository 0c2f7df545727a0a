"""A node that stops answering mid-run (issue 52): once ssh could not reach it (rc 255), its next
commands say so at once -- not each waiting out its own ssh timeout -- and it is tried again on a
bounded schedule, so a node that comes back is asked, and judged, again. A stand-in `ssh` on PATH
(a real process; it counts its starts and exits 255 while the node is "cut"); the schedule's clock is
moved by the test, never slept on."""
import os
import stat

import pytest

from rackgate.transport import SshRunner, TransportError, gone

pytestmark = pytest.mark.suite

SSH = """#!/bin/sh
echo x >> "$RG_SSH_STARTS"
if [ -e "$RG_CUT" ]; then echo "ssh: connect to host node4 port 22: Connection timed out" >&2; exit 255; fi
echo answered
"""


@pytest.fixture
def node(tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "ssh").write_text(SSH)
    (bin_ / "ssh").chmod(stat.S_IRWXU)
    starts, cut = tmp_path / "starts", tmp_path / "cut"
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RG_SSH_STARTS", str(starts))
    monkeypatch.setenv("RG_CUT", str(cut))
    clock = [1000.0]
    monkeypatch.setattr(gone, "now", lambda: clock[0])
    gone.forget()
    yield SshRunner("node4", f"root@{tmp_path.name}", connect_timeout_s=3), cut, starts, clock
    gone.forget()


def _starts(starts) -> int:
    return len(starts.read_text().splitlines()) if starts.exists() else 0


def test_a_node_that_stopped_answering_is_said_at_once_and_retried_on_a_schedule(node):
    runner, cut, starts, clock = node
    assert runner.run(["true"], 5).stdout.strip() == "answered"
    cut.touch()
    with pytest.raises(TransportError, match="Connection timed out"):
        runner.run(["cat", "/sys/x"], 5)
    assert _starts(starts) == 2
    for _ in range(5):   # the node's remaining items: said at once, ssh not started
        with pytest.raises(TransportError, match=r"stopped answering 0s ago \(ssh: connect.*Connection timed out\)"):
            runner.run(["cat", "/sys/y"], 5)
    assert _starts(starts) == 2
    clock[0] += gone.RETRY_S[0]          # the schedule's first retry: asked for real, still cut
    with pytest.raises(TransportError, match="Connection timed out"):
        runner.run(["true"], 5)
    assert _starts(starts) == 3
    clock[0] += gone.RETRY_S[0]          # not yet: the next try is further off
    with pytest.raises(TransportError, match="stopped answering"):
        runner.run(["true"], 5)
    assert _starts(starts) == 3
    cut.unlink()                          # the node comes back
    clock[0] += gone.RETRY_S[1]
    assert runner.run(["true"], 5).stdout.strip() == "answered"
    assert runner.run(["true"], 5).stdout.strip() == "answered"   # back for good: asked every time
    assert _starts(starts) == 5


def test_the_schedule_is_bounded():
    assert list(gone.RETRY_S) == sorted(gone.RETRY_S) and gone.RETRY_S[-1] <= 60
