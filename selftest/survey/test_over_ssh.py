"""The survey over the system OpenSSH client (a real sshd on loopback): every check of a node goes
through that node's ControlMaster, so the sshd sees one TCP connection per node at most, however
many round trips the survey makes (no per-check reconnects)."""
import socket
import textwrap
import threading

import pytest

from rackgate import config
from rackgate.sim.rack import build
from rackgate.survey import run

from ..harness import REPO
from ..sshd import sshd

pytestmark = pytest.mark.system


class CountingProxy:
    """127.0.0.1:<port> -> the sshd, counting the TCP connections made through it."""

    def __init__(self, target_port: int):
        self.target, self.count, self.sock = target_port, 0, socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            s = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((c, s), (s, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for x in (a, b):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.sock.close()


@pytest.fixture
def server(tmp_path):
    with sshd(tmp_path / "sshd") as s:
        yield s


def test_one_connection_per_node_for_every_check(server, tmp_path):
    proxy = CountingProxy(server.port)
    opts = [o for o in server.options if not o.startswith("Port=")] + [f"Port={proxy.port}"]
    rack_file = tmp_path / "ssh-sim.toml"
    base = (REPO / "racks" / "sim18.toml").read_text().split("[sim]")[0]
    rack_file.write_text(base + textwrap.dedent(f"""
        [sim]
        nodes = 3
        transport = "ssh"
        ssh_target = "{server.target}"
        [ssh]
        connect_timeout_s = 5
        options = [{", ".join(f'"{o}"' for o in opts)}]
        [fabric]
        state_wait_s = 4
        state_poll_s = 0.5
    """))
    sim = build(config.load(rack_file))
    hosts = run.hosts_for(sim.rack)
    try:
        reports = run.survey(sim.rack, hosts=hosts)
        assert all(r.usable for r in reports), [r.problems() for r in reports]
        assert proxy.count <= len(reports), f"{proxy.count} ssh connections for {len(reports)} nodes"
        assert proxy.count >= 1
    finally:
        for h in hosts.values():
            h.runner.stop()
        sim.stop()
        proxy.close()
