"""The evidence of a hang (rackgate.atom.stacks): in launch mode, each hung rank's `py-spy dump`
and its node's last log lines; py-spy missing or failing is said as could-not-observe the stacks
(never a finding of its own); attached, nothing is read from processes the suite did not start.
The node is a double answering as the transport does (Result values)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from rackgate.atom.stacks import hang_evidence
from rackgate.transport import Result

pytestmark = pytest.mark.unit

# py-spy dump's layout (benfred/py-spy src/dump.rs print_traces: "Process PID: CMDLINE", "Python vX (EXE)", a
# blank line, then "Thread ID (STATUS): \"NAME\"" and its frames "    NAME (FILE:LINE)")
DUMP = ("Process 4242: ATOM::DP9TP0\nPython v3.12.3 (/usr/bin/python3.12)\n\n"
        "Thread 0x7F3A2C1FF740 (active): \"MainThread\"\n    all_reduce (torch/distributed/distributed_c10d.py:2806)\n")


@dataclass
class _Host:
    py_spy: bool
    dump_rc: int = 0
    ran: list = field(default_factory=list)

    def shell(self, script, *args, timeout=None):
        self.ran.append(script)
        out = ("/usr/local/bin/py-spy\n" if self.py_spy else "") + "__rackgate_asked__\n"
        return Result("node3", script, 0, out, "", 0.0)

    def run(self, cmd, timeout=None):
        self.ran.append(" ".join(cmd))
        if self.dump_rc:
            return Result("node3", " ".join(cmd), self.dump_rc, "", "Error: Permission denied (os error 13)", 0.0)
        return Result("node3", " ".join(cmd), 0, DUMP, "", 0.0)


@dataclass
class _Log:
    host: _Host

    def tail(self, n):
        return "line 1\nEngine Core Mgr: all local EngineCores ready\n"

    def pids(self, refresh=False):
        return {4242: 9, 4243: 10}


@dataclass
class _Server:
    host: _Host
    attached: bool = False
    launched: dict = field(default_factory=lambda: {"node3": object()})

    def node_logs(self):
        return {"node3": _Log(self.host)}


TABLE = {8: "node3", 9: "node3", 10: "node3", 11: "node3"}


def test_the_hung_ranks_stack_and_the_nodes_last_lines_are_attached():
    host = _Host(py_spy=True)
    shown, said = hang_evidence(_Server(host), [9], TABLE)
    titles = [t for t, _ in shown]
    assert titles == ["last lines of node3's log", "py-spy dump of node3/dp9 (pid 4242)"], titles
    assert "all_reduce" in shown[1][1] and said == "node3: py-spy stacks of dp9 attached"
    assert "py-spy dump --pid 4242" in host.ran and not any("4243" in c for c in host.ran)  # dp10 answered


def test_py_spy_missing_is_could_not_observe_the_stacks():
    shown, said = hang_evidence(_Server(_Host(py_spy=False)), [9], TABLE)
    assert "py-spy is not installed on node3" in dict(shown)["py-spy on node3"]
    assert said == "node3: py-spy not installed, no stacks (could not observe)"


def test_py_spy_failing_is_said_with_what_it_said():
    shown, said = hang_evidence(_Server(_Host(py_spy=True, dump_rc=1)), [9], TABLE)
    assert "could not observe: py-spy dump exited 1: Error: Permission denied" in shown[1][1]
    assert "py-spy dump failed for dp9" in said


def test_attached_nothing_is_read():
    host = _Host(py_spy=True)
    assert hang_evidence(_Server(host, attached=True), [9], TABLE) == ([], "")
    assert host.ran == []
