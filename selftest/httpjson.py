"""The base of the self-tests' small HTTP servers (stubs, the real-engine balancer): quiet, and one
way to answer JSON."""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class JsonHandler(BaseHTTPRequestHandler):
    def log_message(self, *a):  # no access log on the test's terminal
        pass

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
