"""A server that refuses ATOM's data_parallel_rank routing hint (an OpenAI-compatible server whose
request model forbids unknown fields): per-rank liveness cannot be seen through it, so SRV-ALIVE is
could-not-observe for every rank, never SKIPPED (the rack file did not say it does not apply) and
never PASSED."""
import contextlib
import json
import threading
from http.server import ThreadingHTTPServer

import pytest

from rackgate.sim.httpjson import JsonHandler

from ..harness import run_suite

pytestmark = pytest.mark.suite

MODEL = "moonshotai/Kimi-K3"


class _Strict(JsonHandler):
    def do_GET(self):
        if self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._send(200 if self.path == "/health" else 404, {})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        extra = sorted(set(req) - {"model", "prompt", "max_tokens", "temperature", "stream", "top_p", "seed"})
        if extra:
            self._send(422, {"detail": [{"type": "extra_forbidden", "loc": ["body", k],
                                         "msg": "Extra inputs are not permitted"} for k in extra]})
            return
        self._send(200, {"id": "x", "object": "text_completion", "model": MODEL,
                         "choices": [{"index": 0, "text": " Paris.", "finish_reason": "stop"}]})


@contextlib.contextmanager
def _strict_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Strict)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_refused_rank_hint_is_could_not_observe_not_a_skip(tmp_path):
    with _strict_server() as url:
        run = run_suite(tmp_path, "SRV-ALIVE", "--rack", "rackgate/sim/racks/sim.toml",
                        "--atom-url", url, "--served-model", MODEL)
    items = {t: o for t, o in run.outcomes.items() if "SRV-ALIVE" in t}
    assert items, run.stdout[-3000:] + run.stderr[-2000:]
    for tid, o in items.items():
        assert o.status == "error", (tid, o.status, o.message[:400])
        assert "data_parallel_rank" in o.message and "could not observe" in o.message, o.message[:400]
