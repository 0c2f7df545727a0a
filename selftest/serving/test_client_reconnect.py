"""A kept-alive connection the server drops is not a dead server (the false SRV-LONGCTX "engine
gone afterwards" of a self-test run: the liveness probe reused a pooled connection the sim had
reset), while a server that resets every connection is still reported as not answering."""
from __future__ import annotations

import json
import socket
import struct
import threading

import pytest

from rackgate.atom.client import Client, ServerError

pytestmark = pytest.mark.suite

OK = json.dumps({"choices": [{"text": " Paris", "finish_reason": "length"}]}).encode()


class _Server:
    """Real TCP on loopback: each connection reads one request, then the first `resets`
    connections are closed with a TCP reset (SO_LINGER 0), the others get HTTP 200."""

    def __init__(self, resets: int):
        self.resets, self.seen = resets, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                self.seen += 1
                if self.seen <= self.resets:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    continue
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(OK), OK))

    def close(self):
        self.sock.close()


def test_a_dropped_connection_is_tried_once_more():
    srv = _Server(resets=1)
    try:
        rep = Client(srv.url, "m", timeout=30).completion("The capital of France is", max_tokens=4)
    finally:
        srv.close()
    assert rep.status == 200 and srv.seen == 2


def test_a_server_that_drops_every_connection_does_not_answer():
    srv = _Server(resets=100)
    try:
        with pytest.raises(ServerError, match="cannot connect"):
            Client(srv.url, "m", timeout=30).completion("The capital of France is", max_tokens=4)
    finally:
        srv.close()
    assert srv.seen == 2  # once more, not forever
