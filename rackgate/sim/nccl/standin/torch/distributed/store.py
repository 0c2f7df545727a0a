"""A TCP key-value store for the rendezvous, as torch.distributed.TCPStore: the master listens,
every rank connects (retrying until the timeout while the master is not up yet), `set` and a
blocking `get` bounded by the timeout. One JSON line per request and per answer."""
from __future__ import annotations

import datetime
import json
import socket
import threading
import time


def _seconds(timeout) -> float:
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout if timeout is not None else 300.0)


class _Server:
    def __init__(self, port: int):
        self.sock = socket.create_server(("", port), reuse_port=False)
        self.data: dict[str, str] = {}
        self.cond = threading.Condition()
        self.clients = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as f:
            for raw in f:
                req = json.loads(raw)
                op = req["op"]
                if op == "hello":
                    with self.cond:
                        self.clients += 1
                        self.cond.notify_all()
                    ans = {"ok": True}
                elif op == "set":
                    with self.cond:
                        self.data[req["k"]] = req["v"]
                        self.cond.notify_all()
                    ans = {"ok": True}
                else:  # get: wait for the key, at most the client's timeout
                    key = req["k"]
                    with self.cond:
                        found = self.cond.wait_for(lambda k=key: k in self.data, timeout=req["t"])
                        ans = {"ok": True, "v": self.data[key]} if found else {"ok": False}
                f.write((json.dumps(ans) + "\n").encode())
                f.flush()

    def wait_clients(self, n: int, timeout_s: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.clients >= n, timeout=timeout_s)


class TCPStore:
    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout=datetime.timedelta(seconds=300), wait_for_workers: bool = True, **_):
        self.timeout_s = _seconds(timeout)
        self.host, self.port = host_name, int(port)
        self._server = _Server(self.port) if is_master else None
        deadline = time.monotonic() + self.timeout_s
        last: OSError | None = None
        while True:  # the master may not listen yet (ranks on other nodes start when they start)
            try:
                self.sock = socket.create_connection((host_name, self.port), timeout=max(0.1, deadline - time.monotonic()))
                break
            except OSError as e:
                last = e
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"The client socket has timed out after {self.timeout_s:g}s while trying "
                                       f"to connect to ({host_name}, {port}): {last}") from None
                time.sleep(0.05)
        self.sock.settimeout(None)
        self.local_addr = self.sock.getsockname()[0]
        self._f = self.sock.makefile("rwb")
        self._call({"op": "hello"})
        waited = is_master and wait_for_workers and world_size
        if waited and not self._server.wait_clients(world_size, self.timeout_s):
            raise RuntimeError(f"Timed out after {self.timeout_s:g}s waiting for clients. "
                               f"{self._server.clients}/{world_size} clients joined.")

    def _call(self, req: dict) -> dict:
        self._f.write((json.dumps(req) + "\n").encode())
        self._f.flush()
        line = self._f.readline()
        if not line:
            raise RuntimeError(f"the store at {self.host}:{self.port} closed the connection")
        return json.loads(line)

    def set(self, key: str, value) -> None:
        v = value.decode() if isinstance(value, bytes) else str(value)
        self._call({"op": "set", "k": key, "v": v})

    def get(self, key: str) -> bytes:
        ans = self._call({"op": "get", "k": key, "t": self.timeout_s})
        if not ans["ok"]:
            raise RuntimeError(f"Socket Timeout: waited {self.timeout_s:g}s for key {key!r} in the store")
        return ans["v"].encode()
