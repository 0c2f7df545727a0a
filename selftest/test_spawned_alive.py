"""Whether a process we started is still running is read from `kill -0` only when its answer is
one kill gives: exit 0 (running) or "No such process" (ended). Any other answer (the tool missing,
an error, garbage, sudo's refusal) says nothing, and is never read as "it ended" (that made FAB-BW
and FAB-P2P FAILED on a node whose `kill` failed)."""
import pytest

from rackgate.transport import Host, TransportError
from rackgate.transport.host import Spawned
from rackgate.transport.result import Result

from .inject import failed

pytestmark = pytest.mark.unit


class _Kill:
    node, kind = "node1", "stub"

    def __init__(self, way):
        self.way = way

    def run(self, cmd, timeout, stdin=None):
        if self.way == "running":
            return Result("node1", "kill -0 42", 0, "", "", 0.0)
        if self.way == "ended":
            return Result("node1", "kill -0 42", 1, "", "kill: (42): No such process\n", 0.0)
        return failed("node1", cmd, "kill", self.way, timeout, Result("node1", "kill -0 42", 0, "", "", 0.0))


def _proc(way):
    return Spawned(Host("node1", _Kill(way)), 42, "tool", "/tmp/x.log")


def test_running_and_ended_are_read():
    assert _proc("running").alive() is True
    assert _proc("ended").alive() is False


@pytest.mark.parametrize("way", ["missing", "nonzero", "garbage", "cut", "sudo"])
def test_any_other_answer_is_could_not_tell(way):
    with pytest.raises(TransportError, match="could not tell whether PID 42 is running"):
        _proc(way).alive()
