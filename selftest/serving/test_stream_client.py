"""The stream client against a served ATOM-shaped stream (a local HTTP server; the judge alone:
test_stream_judge.py)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from rackgate.atom.client import Client

pytestmark = pytest.mark.suite


class _AtomStream(BaseHTTPRequestHandler):
    """ATOM's stream_completion_response ending, verbatim in shape."""
    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        base = {"id": "cmpl-1", "object": "text_completion", "created": 0, "model": "m"}
        for c in ({"text": " Paris", "finish_reason": None}, {"text": ".", "finish_reason": "length"},
                  {"text": "", "finish_reason": "stop"}):
            self.wfile.write(b"data: " + json.dumps({**base, "choices": [{"index": 0, "logprobs": None, **c}]}).encode()
                             + b"\n\n")
        usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        self.wfile.write(b"data: " + json.dumps({**base, "choices": [], "usage": usage}).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")


def test_client_reads_atoms_stream_ending():
    srv = HTTPServer(("127.0.0.1", 0), _AtomStream)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        reply = Client(f"http://127.0.0.1:{srv.server_port}", "m", timeout=30).stream(
            "/v1/completions", {"prompt": "x", "max_tokens": 2})
    finally:
        srv.shutdown()
        srv.server_close()
    choice = reply.body["choices"][0]
    assert (choice["text"], choice["finish_reason"]) == (" Paris.", "length")
    assert reply.body["pieces"] == [" Paris", ".", ""]
    assert reply.body["server_usage"]["completion_tokens"] == 2
