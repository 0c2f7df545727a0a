"""What the survey reads that no other area renders: each node's TCP socket table
(/proc/net/tcp and /proc/net/tcp6 in the kernel's format), from node["listen"]: [[addr, port]].
Healthy: sshd on 0.0.0.0:22 and [::]:22. Faults in rackgate/sim/faults/survey.py add to it."""
from __future__ import annotations

import ipaddress
from pathlib import Path

from ..render import node_root

TCP_HEAD = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
            "inode")
TCP6_HEAD = ("  sl  local_address                         remote_address                        st tx_queue "
             "rx_queue tr tm->when retrnsmt   uid  timeout inode")
TAIL = "00000000:00000000 00:00000000 00000000     0        0 {inode} 1 0000000000000000 100 0 0 10 0"


def healthy(state, gpus: int) -> None:
    for n in state.nodes.values():
        if n.listen is None:
            n.listen = [["0.0.0.0", 22], ["::", 22]]


def _hex(addr: str) -> str:
    """The kernel's hex form: IPv4 one little-endian u32, IPv6 four of them."""
    packed = ipaddress.ip_address(addr).packed
    return "".join(packed[i:i + 4][::-1].hex().upper() for i in range(0, len(packed), 4))


def render(rack_dir: Path, name: str, node) -> None:
    net = node_root(rack_dir, name) / "proc" / "net"
    net.mkdir(parents=True, exist_ok=True)
    v4, v6 = [TCP_HEAD], [TCP6_HEAD]
    for i, (addr, port) in enumerate(node.listen or []):
        six = ipaddress.ip_address(addr).version == 6
        rows = v6 if six else v4
        zero = "0" * (32 if six else 8)
        rows.append(f"{len(rows) - 1:4d}: {_hex(addr)}:{port:04X} {zero}:0000 0A "
                    + TAIL.format(inode=20000 + i))
    (net / "tcp").write_text("\n".join(v4) + "\n")
    (net / "tcp6").write_text("\n".join(v6) + "\n")
