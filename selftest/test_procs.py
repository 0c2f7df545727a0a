"""The one start-wait-kill (transport.procs.run_bounded) and the one free-port finder."""

import pytest

from rackgate.transport.deadline import wait_for
from rackgate.transport.procs import REGISTRY, Overran, run_bounded

pytestmark = pytest.mark.suite


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead for our purposes
    except FileNotFoundError:
        return False


def test_output_rc_and_stdin():
    done = run_bounded(["sh", "-c", "cat; echo err >&2; exit 3"], 60, stdin="in\n")
    assert (done.rc, done.stdout, done.stderr) == (3, "in\n", "err\n")


def test_overrun_ends_the_group_and_keeps_partial_output(tmp_path):
    pidfile = tmp_path / "child"
    ticks = []
    with pytest.raises(Overran) as e:
        run_bounded(["sh", "-c", f"sleep 300 & echo $! > {pidfile}; echo started; wait"], 2,
                    tick=lambda pid, t: ticks.append(pid), tick_s=0.5)
    assert e.value.stdout == "started\n" and "within 2s" in str(e.value)
    assert ticks and set(ticks) == {e.value.pid}
    child = int(pidfile.read_text())
    assert wait_for(lambda: not alive(child), 30), "the overrun's child outlived its group"
    assert e.value.pid not in REGISTRY._local


