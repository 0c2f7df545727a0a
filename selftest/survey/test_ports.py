"""Listening sockets from /proc/net/tcp{,6} (the kernel's format), and what PLAT-FREE calls held (gates/plat.py)."""
import pytest

from rackgate.errors import UnrecognisedOutput
from rackgate.gates import plat
from rackgate.probes import tcp as ports
from rackgate.sim.areas.survey import _hex

pytestmark = pytest.mark.unit

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:CD23 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 33292 1 0000000066600181 100 0 0 10 0
   1: 00000000:7374 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 564 1 0000000012c7d281 100 0 0 10 0
   2: 0100007F:7374 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 565 1 0000000012c7d281 20 4 30 10 -1
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 23521 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000101007F:E991 0000000000000000FFFF00000100007F:97BC 06 00000000:00000000 03:00000C3F 00000000     0        0 0 3 00000000c0bdc472
"""


def test_listen_rows_only():
    got = ports.parse(TCP)
    assert [(x.addr, x.port) for x in got] == [("127.0.0.1", 52515), ("0.0.0.0", 29556)]
    assert [(x.addr, x.port) for x in ports.parse(TCP6, "/proc/net/tcp6")] == [("[::]", 22)]


def test_busy_names_the_port():
    got = ports.parse(TCP) + ports.parse(TCP6)
    assert plat.ports_held(got, [8000, 29500]) == []
    assert plat.ports_held(got, [29556]) == ["port 29556 is listening (0.0.0.0:29556): someone's server or rendezvous holds it"]


def test_unknown_layout_is_not_healthy():
    with pytest.raises(UnrecognisedOutput):
        ports.parse("")
    with pytest.raises(UnrecognisedOutput):
        ports.parse("State Recv-Q Send-Q Local Address:Port\nLISTEN 0 128 0.0.0.0:22\n")


def test_sim_writes_the_kernel_hex():
    assert _hex("127.0.0.1") == "0100007F"
    assert _hex("::") == "0" * 32
