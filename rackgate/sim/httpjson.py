"""The sim's HTTP handlers' base (the sim server's API; the self-tests' stubs and balancer reuse
it): no access log, and one way to answer JSON."""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class JsonHandler(BaseHTTPRequestHandler):
    def log_message(self, *a):  # no access log (the sim server: --disable_uvicorn_access_log)
        pass

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
