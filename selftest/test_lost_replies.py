"""A reply that was lost or cut is not what the node said: a start whose reply came back cut has no
PID (not the digits that came back), a kill that failed is not a process that would not die, a
line cut mid-way is not evidence, and a process the suite may have started is not 'foreign'.
(selftest/test_tool_failures.py finds these by failing every command every way; these pin each.)"""
import os
import signal

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.gates import fabric as judge
from rackgate.probes import collective
from rackgate.probes.pair_runs import LeftoverScan
from rackgate.probes.ubench import UbenchProc
from rackgate.transport import Host, LocalRunner, SpawnUnknown, TransportError
from rackgate.transport.deadline import wait_for

from .inject import FailingRunner

pytestmark = pytest.mark.suite

SPAWN = 'sh:log="$1"; shift; mkdir -p'
KILL = 'sh:kill -"$1" -"$2" 2>/dev/null'


def _host(tmp_path, fail: dict[str, str]) -> Host:
    plan = {"log": str(tmp_path / "sent.jsonl"), "fail": {"n1": fail}}
    return Host("n1", FailingRunner(LocalRunner("n1"), plan), sysroot=str(tmp_path))


def _pids_running(marker: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        out.append(int(d))
            except OSError:
                pass
    return out


@pytest.mark.parametrize("way", ["cut", "timeout", "ssh255", "garbage", "empty"])
def test_a_start_whose_reply_is_lost_has_no_pid(tmp_path, way):
    marker = f"rg-lost-{way}-{os.getpid()}"
    host = _host(tmp_path, {SPAWN: way})
    try:
        with pytest.raises(SpawnUnknown) as e:
            host.spawn(["sleep", "300", marker], "/logs/x.log")
        assert e.value.argv == ["sleep", "300", marker] and "could not start" in str(e.value)
    finally:
        for pid in _pids_running(marker):  # 'cut' really started it: this test's own process
            os.kill(pid, signal.SIGKILL)


def test_a_kill_that_failed_on_a_running_process_is_said_so(tmp_path):
    plain = Host("n1", LocalRunner("n1"), sysroot=str(tmp_path))
    proc = plain.spawn(["sleep", "300"], "/logs/s.log")
    proc.host = _host(tmp_path, {KILL: "nonzero"})
    with pytest.raises(TransportError, match=rf"could not send TERM to PID {proc.pid} \(started by rackgate\)"):
        proc.stop(grace_s=1)
    assert os.path.exists(f"/proc/{proc.pid}")
    os.kill(proc.pid, signal.SIGKILL)


def test_a_kill_that_failed_on_an_ended_process_is_no_error(tmp_path):
    plain = Host("n1", LocalRunner("n1"), sysroot=str(tmp_path))
    proc = plain.spawn(["true"], "/logs/t.log")
    # the event, not a time: the node says the process is gone (`kill -0`), under any load
    assert wait_for(lambda: True if not proc.alive() else None, 120), f"PID {proc.pid} never ended"
    proc.host = _host(tmp_path, {KILL: "nonzero"})
    proc.stop(grace_s=5)  # the process had ended: nothing to signal, nothing to say
    assert proc.stopped


P = UbenchProc(4242, "ualoe_p2p.exe", "/root/ubench/07_ualoe/build/ualoe_p2p.exe export -port=29556", 4242)


def test_a_process_the_suite_may_have_started_is_neither_foreign_nor_healthy():
    lost = [["/root/ubench/07_ualoe/build/ualoe_p2p.exe", "export", "-port=29556"]]
    scan = LeftoverScan("node2", "after p2p round 1 (node1-node2)", [P], set(), unsure=lost)
    assert judge.leftovers([scan]) == []
    with pytest.raises(CouldNotObserve, match="node2: PID 4242 .* may be the one rackgate started"):
        judge.no_unsure_leftovers([scan])
    other = LeftoverScan("node2", "before p2p round 1", [P], set(),
                         unsure=[["/root/ubench/07_ualoe/build/ualoe_p2p.exe", "import", "-port=29556"]])
    assert len(judge.leftovers([other])) == 1  # another command line: someone else's, a finding


def test_our_process_no_signal_reached_is_not_unkillable():
    scan = LeftoverScan("node2", "after p2p round 1 (node1-node2)", [P], {4242}, unended={4242})
    assert judge.leftovers([scan]) == []
    with pytest.raises(CouldNotObserve, match="no signal could be sent to it"):
        judge.no_unsure_leftovers([scan])
    assert "unkillable" in judge.leftovers([LeftoverScan("node2", "after p2p round 1", [P], {4242})])[0]


HEALTHY = ("RGCOLL-START pid=1 python=3.12.3 torch=2.11.0 nnodes=1 node_rank=0 backend=auto\n"
           "ct1:4242:4290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEMMNNVL\n")


def test_a_line_cut_mid_way_is_not_read():
    cut = HEALTHY[: HEALTHY.index("CUMEMMNNVL") + 3]  # '... via P2P/CUM', the process killed there
    assert collective.parse(cut).transports == []
    assert collective.parse(HEALTHY).transports == ["P2P/CUMEMMNNVL"]
    assert collective.parse(cut, "stderr line\n").transports == []  # stderr does not end stdout's line
