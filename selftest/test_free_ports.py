"""The one free-port finder (transport.ports): ranges outside the kernel's ephemeral range, claims,
slots."""
import os
import socket
import time

import pytest

from rackgate.transport import ports

pytestmark = pytest.mark.unit


def test_free_port_ranges_are_bindable():
    base = ports.free_port("127.0.0.1", span=5, below=1)
    socks = []
    try:
        for p in range(base - 1, base + 5):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", p))  # would raise if any were taken
    finally:
        for s in socks:
            s.close()
    assert 0 < ports.free_port() < 65536


def test_chosen_ports_are_not_the_kernels_to_hand_out():
    """A port chosen now is bound later; meanwhile the kernel hands ephemeral ports to every bind
    of port 0 and every outgoing connection (a sim rank took a model server's port that way)."""
    eph = ports.ephemeral_range()
    for span, below in [(1, 0), (1, 0), (50, 1), (5, 0)]:
        base = ports.free_port("127.0.0.1", span=span, below=below)
        assert not set(range(base - below, base + span)) & set(eph), (base, span, below)


def test_a_claimed_port_is_not_chosen_again_until_its_claim_lapses(tmp_path, monkeypatch):
    monkeypatch.setattr(ports, "CLAIMS", tmp_path)
    monkeypatch.setattr(ports, "_bindable", lambda run, host: True)  # claims only, not this machine
    monkeypatch.setattr(ports, "_layout", lambda: (range(20000, 20002), range(21000, 21065, 64)))
    first, second = ports.free_port(), ports.free_port()
    assert {first, second} == {20000, 20001}
    with pytest.raises(RuntimeError, match="no 1 consecutive free ports"):
        ports.free_port()  # both are claimed by choosers that have not bound them yet
    lapsed = time.time() - ports.HOLD_S - 1
    os.utime(tmp_path / f"p{first}", (lapsed, lapsed))
    assert ports.free_port() == first
    # runs: every slot once, then the one claimed longest ago (a sim built long before)
    runs = [ports.free_port("0.0.0.0", span=10, below=1) for _ in range(2)]
    assert sorted(runs) == [21001, 21065]
    # the first claim is the older (two claims within one tick of the file clock have the same
    # mtime: the order is set here, not left to how fast the machine made them)
    older = time.time() - 2
    os.utime(tmp_path / f"s{runs[0] - 1}", (older, older))
    runs.append(ports.free_port("0.0.0.0", span=10, below=1))
    assert runs[2] == runs[0]
    os.utime(tmp_path / f"s{runs[1] - 1}", (lapsed + 5, lapsed + 5))
    assert ports.free_port("0.0.0.0", span=3) == runs[1] - 1


def test_runs_of_ports_do_not_fragment_the_pool(tmp_path, monkeypatch):
    """Every sim claims a run of 51 ports for its collectives; a self-test run builds about 150
    sims within one claim's life. Claimed at random places, runs left no room for the next one."""
    monkeypatch.setattr(ports, "CLAIMS", tmp_path)
    singles, slots = ports._layout()
    monkeypatch.setattr(ports, "_bindable", lambda run, host: True)  # claims only, not this machine
    bases = [ports.free_port("0.0.0.0", span=50, below=1) for _ in slots]
    assert len(set(bases)) == len(slots) >= 150
    assert not set(singles) & {p for b in bases for p in range(b - 1, b + 50)}
    wide = ports.free_port("0.0.0.0", span=190, below=1)  # an 18-node sim: three slots, the oldest
    assert {wide - 1, wide + 63, wide + 127} <= set(slots)
    with pytest.raises(ValueError, match="a run of 99999 ports"):
        ports.free_port(span=99999)
