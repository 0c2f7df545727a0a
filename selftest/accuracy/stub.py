"""A scripted OpenAI-compatible server on loopback: real HTTP, one scripted answer per GSM8K
question, every request body recorded. The oracle test runs lm_eval and the quick gate against
it and compares what each sent and scored."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from rackgate.sim.httpjson import JsonHandler

# question text -> (content, finish_reason); content None is a JSON null
Script = Callable[[str], "tuple[str | None, str]"]


def _question(text: str) -> str:
    i = text.rfind("Question: ")
    j = text.rfind("\nAnswer:")
    return text[i + len("Question: "):j].strip() if i >= 0 and j > i else ""


class Stub:
    """`hold(body)`: that request is accepted and never answered (a hung rank) until the stub closes."""

    def __init__(self, script: Script, model: str = "stub-model", hold: Callable[[dict], bool] | None = None,
                 delay: Callable[[dict], float] | None = None):
        self.script, self.model, self.hold, self.delay = script, model, hold, delay
        self.closing = threading.Event()
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(JsonHandler):
            def do_GET(self):
                if self.path == "/v1/models":
                    return self._send(200, {"object": "list", "data": [{"id": stub.model, "object": "model"}]})
                self._send(404, {"detail": "Not Found"})

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with stub.lock:
                    stub.requests.append((self.path, body))
                if stub.hold and stub.hold(body):
                    stub.closing.wait()
                    return
                if stub.delay:
                    time.sleep(stub.delay(body))
                if self.path == "/v1/chat/completions":
                    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
                    content, finish = stub.script(_question(user[-1]["content"] if user else ""))
                    msg = {"role": "assistant", "content": content, "reasoning_content": "Thinking it over."}
                    return self._send(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                                            "model": stub.model, "choices": [{"index": 0, "message": msg,
                                                                              "finish_reason": finish}]})
                if self.path == "/v1/completions":
                    content, finish = stub.script(_question(body.get("prompt", "")))
                    return self._send(200, {"id": "cmpl-1", "object": "text_completion", "created": int(time.time()),
                                            "model": stub.model, "choices": [{"index": 0, "text": content or "",
                                                                              "finish_reason": finish}]})
                self._send(404, {"detail": "Not Found"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "Stub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self, path: str) -> dict[str, dict]:
        """question -> the last body posted to path for it."""
        out = {}
        for p, body in self.requests:
            if p != path:
                continue
            if path == "/v1/chat/completions":
                user = [m for m in body.get("messages", []) if m.get("role") == "user"]
                out[_question(user[-1]["content"])] = body
            else:
                out[_question(body.get("prompt", ""))] = body
        return out
