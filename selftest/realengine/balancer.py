"""One endpoint in front of several `transformers serve` engines, spreading requests over them as
ATOM's API server spreads them over its DP ranks (atom/model_engine/engine_core_mgr.py,
CoreManager._dispatch_to_dp_ranks / _select_dp_rank_locked):

- a request's `data_parallel_rank` names its engine (validated: out of range is HTTP 400
  "Invalid data_parallel_rank=R; local_engine_count=N", as ATOM's ValueError; the field is not
  passed on, transformers serve does not know it);
- otherwise `least_requests` (ATOM's default --dp-load-balance): the engine with the fewest
  requests in flight, ties resolved by a rotating cursor, so a burst spreads over all of them.

Each engine is one "DP rank": a rack whose rank 2 is broken is engines [healthy, healthy, bang].
An engine given as `(HUNG, "")` is a rank that accepts every request and never answers (stuck in a
collective one participant never joined): the request is read, nothing is ever written back, until
the balancer stops.
The engines serve different folder names; the balancer serves one name (like --served-model-name)
and rewrites `model` for each engine. Answers are relayed as they arrive (streams too); a client
that goes away closes the engine's connection, so the engine stops generating for it.

Stdlib only: real HTTP on loopback, one thread per request.
"""
from __future__ import annotations

import http.client
import json
import threading
from http.server import ThreadingHTTPServer
from urllib.parse import urlsplit

from rackgate.sim.httpjson import JsonHandler

HUNG = "hung:"  # an engine url: accepts every request, never answers


class Balancer:
    """`with Balancer(name, [(url, model), ...]) as b:` ... b.url; b.served[i] counts engine i's requests."""

    def __init__(self, name: str, engines: list[tuple[str, str]]):
        self.name, self.engines = name, list(engines)
        self.lock = threading.Lock()
        self.inflight = [0] * len(engines)
        self.served = [0] * len(engines)
        self.cursor = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 2048
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()

    @property
    def model(self) -> str:  # the served name, as TransformersServer.model (run_gate reads both)
        return self.name

    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def pick(self, hint, body: dict | None = None) -> int:
        """The engine for a request: its hint, else the fewest in flight from a rotating start."""
        n = len(self.engines)
        with self.lock:
            if hint is not None:
                if not isinstance(hint, int) or not 0 <= hint < n:
                    raise ValueError(f"Invalid data_parallel_rank={hint}; local_engine_count={n}")
                rank = hint
            else:
                start = self.cursor % n
                rank = min(range(n), key=lambda i: (self.inflight[(start + i) % n], i))
                rank = (start + rank) % n
                self.cursor += 1
            self.inflight[rank] += 1
            self.served[rank] += 1
        return rank

    def done(self, rank: int, body: dict | None = None) -> None:
        with self.lock:
            self.inflight[rank] -= 1

    def _handler(self):
        bal = self

        class Handler(JsonHandler):
            def do_GET(self):
                if self.path == "/health":
                    return self._send(200, {"status": "ok"})
                if self.path == "/v1/models":
                    return self._send(200, {"object": "list", "data": [{"id": bal.name, "object": "model",
                                                                          "owned_by": "balancer"}]})
                self._send(404, {"detail": "Not Found"})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._send(400, {"detail": "body is not JSON"})
                if body.get("model") not in (None, bal.name):
                    return self._send(400, {"detail": f"Requested model '{body.get('model')}' does not match "
                                                      f"server model '{bal.name}'"})
                try:
                    rank = bal.pick(body.pop("data_parallel_rank", None), body)
                except ValueError as e:
                    return self._send(400, {"error": {"message": str(e), "type": "invalid_request_error",
                                                      "code": 400}})
                try:
                    self._relay(rank, body)
                finally:
                    bal.done(rank, body)

            def _relay(self, rank: int, body: dict) -> None:
                url, model = bal.engines[rank]
                if url == HUNG:
                    bal.stopping.wait()  # accepted; no status line, no byte, ever
                    return
                u = urlsplit(url)
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
                try:
                    conn.request("POST", self.path, json.dumps({**body, "model": model}).encode(),
                                 {"content-type": "application/json"})
                    resp = conn.getresponse()
                    self.send_response(resp.status)
                    self.send_header("content-type", resp.getheader("content-type") or "application/json")
                    self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                    while True:
                        piece = resp.read1(65536)
                        if not piece:
                            break
                        self.wfile.write(piece)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went: closing the engine's connection stops its generation
                except OSError as e:
                    try:
                        self._send(502, {"detail": f"engine {rank} ({url}): {e}"})
                    except OSError:
                        pass
                finally:
                    conn.close()

        return Handler

    def start(self) -> "Balancer":
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="balancer")
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "Balancer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
