"""The run's one launch of the session server is claimed with a flock (rackgate.atom.life.Claim):
workers started deliberately out of step -- one held inside its claim, between taking the lock
and writing its name, while the other claims; one claiming after the first has ended; one
killed inside its claim -- and exactly one of them ever launches. Held by flag files, not sleeps."""
import os
import signal
import subprocess
import sys

import pytest

from rackgate.transport.deadline import wait_for

from .harness import REPO, user_env

pytestmark = pytest.mark.suite

CLAIMER = """
import sys
from pathlib import Path

from rackgate.atom.life import Claim
from rackgate.transport.deadline import wait_for

d, me, hold_at = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def hold(point):
    if hold_at == point:
        (d / f"{me}.{point}").touch()
        assert wait_for(lambda: (d / f"{me}.go").exists(), 300), "never told to go on"


claim = Claim(d / "claim", me)
why = claim.take(_between=lambda: hold("between"))
print("LEADER" if not why else "NOT " + why, flush=True)
hold("after")
claim.release()
"""
BOUND_S = 300  # every wait below is bounded; on a quiet machine each is well under a second


def _start(d, me, hold_at="none"):
    return subprocess.Popen([sys.executable, "-c", CLAIMER, str(d), me, hold_at], cwd=REPO, env=user_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _held(d, flag):
    assert wait_for(lambda: (d / flag).exists(), BOUND_S), f"{flag} never appeared"


def _out(p):
    return p.communicate(timeout=BOUND_S)[0].strip()


def test_a_worker_claiming_while_another_is_mid_claim_does_not_launch(tmp_path):
    a = _start(tmp_path, "gw0", "between")
    _held(tmp_path, "gw0.between")  # gw0 holds the lock and has not written its name yet
    b = _out(_start(tmp_path, "gw1"))
    (tmp_path / "gw0.go").touch()
    assert _out(a) == "LEADER"
    assert b.startswith("NOT this run's one server is launched by another worker (claimed, not yet named)"), b


def test_a_worker_claiming_after_the_launcher_started_or_ended_does_not_launch(tmp_path):
    a = _start(tmp_path, "gw1", "after")
    _held(tmp_path, "gw1.after")  # gw1 is the launcher, its server running
    b = _out(_start(tmp_path, "gw0"))
    assert "launched by another worker (gw1)" in b and "gw0 launches none" in b, b
    (tmp_path / "gw1.go").touch()
    assert _out(a) == "LEADER"
    c = _out(_start(tmp_path, "gw2"))  # the launcher has ended: no second launch in this run
    assert c == "NOT this run's one server was launched by gw1, which has ended; gw2 launches none", c


def test_a_worker_killed_inside_its_claim_leaves_the_launch_to_one_other(tmp_path):
    """Killed after taking the lock, before naming itself (so before any launch): the kernel
    releases the lock, and of the next two workers exactly one launches."""
    a = _start(tmp_path, "gw0", "between")
    _held(tmp_path, "gw0.between")
    os.kill(a.pid, signal.SIGKILL)
    a.wait(timeout=BOUND_S)
    b = _start(tmp_path, "gw1", "between")
    _held(tmp_path, "gw1.between")
    c = _out(_start(tmp_path, "gw2"))
    (tmp_path / "gw1.go").touch()
    assert (_out(b), c.split(" (")[0]) == ("LEADER", "NOT this run's one server is launched by another worker")
