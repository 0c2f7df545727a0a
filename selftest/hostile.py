"""A hostile OpenAI-protocol endpoint (issue 52): a real HTTP server on 127.0.0.1 whose every answer
misbehaves in one named way, counting the bytes it got out before the client hung up.

    with Hostile("endless") as h:   # h.url, h.sent (bytes written), h.requests
        Client(h.url, "m").stream("/v1/completions", {...})

BEHAVIOURS (name -> what every POST gets; GET /v1/models is answered well, naming MODEL):
- endless:   HTTP 200 text/event-stream, one token a chunk, forever (never past the client's close)
- huge:      HTTP 200 application/json, a completion whose text never ends (HUGE_BYTES, generated
             as it is sent: never held here)
- garbage:   HTTP 200 application/json, bytes that are neither UTF-8 nor JSON
- trickle:   HTTP 200 application/json, one byte every TRICKLE_S, forever
- html:      HTTP 200 text/html, a proxy's page (the wrong content type)
- error200:  HTTP 200 application/json, an error object and no choices
- too-long:  HTTP 400 naming the request (vLLM's and ATOM's words for a prompt past max_model_len)
- unknown-field: HTTP 400 naming a field the server does not take
- healthy:   a proper completion (the control)
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "hostile/model"
HUGE_BYTES = 600 << 20   # the 600 MB body
TRICKLE_S = 0.05
MAX_MODEL_LEN = 32768
TOO_LONG = (f"This model's maximum context length is {MAX_MODEL_LEN} tokens. However, you requested 49160 tokens "
            "(49144 in the messages, 16 in the completion). Please reduce the length of the messages or completion.")
UNKNOWN_FIELD = "Unrecognized request argument supplied: data_parallel_rank"
BEHAVIOURS = ("endless", "huge", "garbage", "trickle", "html", "error200", "too-long", "unknown-field", "healthy")


class Hostile:
    def __init__(self, behaviour: str, max_model_len: int | None = MAX_MODEL_LEN):
        assert behaviour in BEHAVIOURS, behaviour
        self.behaviour, self.max_model_len = behaviour, max_model_len
        self.sent = 0            # bytes of bodies written before the client hung up
        self.requests = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Hostile:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True, name="hostile").start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def count(self, n: int) -> None:
        with self._lock:
            self.sent += n


def _handler(h: Hostile) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, ctype: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            h.count(len(body))

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                card: dict[str, Any] = {"id": MODEL, "object": "model", "owned_by": "hostile"}
                if h.max_model_len is not None:
                    card["max_model_len"] = h.max_model_len
                self._send(200, "application/json", json.dumps({"object": "list", "data": [card]}).encode())
            else:
                self._send(200, "application/json", b"{}")

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            req = json.loads(self.rfile.read(n) or b"{}")
            with h._lock:
                h.requests += 1
            try:
                getattr(self, "_" + h.behaviour.replace("-", "_"))(req)
            except (BrokenPipeError, ConnectionResetError):
                pass   # the client hung up: what it should do

        def _stream_head(self, ctype: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            h.count(len(data))

        def _endless(self, req: dict[str, Any]) -> None:
            self._stream_head("text/event-stream")
            i = 0
            while True:
                i += 1
                event = {"id": "cmpl-1", "object": "text_completion", "model": MODEL,
                         "choices": [{"index": 0, "text": f" tok{i}", "finish_reason": None}]}
                self._chunk(f"data: {json.dumps(event)}\n\n".encode())

        def _huge(self, req: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            head = b'{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"'
            self.wfile.write(head)
            h.count(len(head))
            block = b"ha" * (1 << 15)
            left = HUGE_BYTES - len(head)
            while left > 0:
                part = block[:left]
                self.wfile.write(part)
                h.count(len(part))
                left -= len(part)

        def _garbage(self, req: dict[str, Any]) -> None:
            self._send(200, "application/json", bytes(range(128, 256)) * 8)

        def _trickle(self, req: dict[str, Any]) -> None:
            self._stream_head("application/json")
            for b in b'{"choices": [{"text": "':
                self._chunk(bytes([b]))
                time.sleep(TRICKLE_S)
            while True:
                self._chunk(b"x")
                time.sleep(TRICKLE_S)

        def _html(self, req: dict[str, Any]) -> None:
            self._send(200, "text/html", b"<html><body><h1>502 Bad Gateway</h1>nginx</body></html>")

        def _error200(self, req: dict[str, Any]) -> None:
            self._send(200, "application/json", json.dumps(
                {"error": {"message": "internal engine error", "type": "InternalServerError", "code": 500}}).encode())

        def _too_long(self, req: dict[str, Any]) -> None:
            self._send(400, "application/json", json.dumps(
                {"object": "error", "message": TOO_LONG, "type": "BadRequestError", "param": None, "code": 400}).encode())

        def _unknown_field(self, req: dict[str, Any]) -> None:
            self._send(400, "application/json", json.dumps(
                {"error": {"message": UNKNOWN_FIELD, "type": "invalid_request_error", "code": 400}}).encode())

        def _healthy(self, req: dict[str, Any]) -> None:
            body = {"id": "cmpl-1", "object": "text_completion", "model": MODEL,
                    "choices": [{"index": 0, "text": " Paris.", "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
            if req.get("stream"):
                self._stream_head("text/event-stream")
                self._chunk(f"data: {json.dumps(body)}\n\n".encode())
                self._chunk(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
            else:
                self._send(200, "application/json", json.dumps(body).encode())

    return Handler
