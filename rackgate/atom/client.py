"""An OpenAI-protocol client for ATOM: explicit timeouts, no silent retries, one-line errors."""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CouldNotObserve
from ..secrets import redact
from .bounded import Budget, chunks

if TYPE_CHECKING:
    import requests

# requests (with urllib3 and its two charset detectors, ~0.2 CPU s) is imported where a request
# is made, not with this module: the server fixtures import this module in every suite run, and a
# run that asks no server (`-m platform`, `-m fabric`) need not pay for it.


class ServerError(CouldNotObserve):
    """The server could not be asked (refused, timed out, non-JSON): one line, no traceback."""


def _json_of(raw: bytes, what: str, status: int) -> Any:
    """A body's JSON, or the one line that says why not: not UTF-8 (JSON is UTF-8, RFC 8259), not JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ServerError(f"{what}: the answer is not UTF-8 (HTTP {status}, {len(raw):,} bytes; byte "
                          f"0x{raw[e.start]:02x} at offset {e.start}): {raw[:80]!r}") from None
    try:
        return json.loads(text)
    except ValueError:
        raise ServerError(f"{what}: non-JSON response (HTTP {status}): {text[:160]!r}") from None


def _body(r: requests.Response, budget: Budget, what: str) -> bytes:
    """The whole body, bounded in size (ServerBrokeLimit past it) and in time (the request's timeout
    over the whole answer: a server that trickles ends there, one line)."""
    import requests
    buf = bytearray()
    try:
        for chunk in chunks(r, budget):
            buf += chunk
            if budget.late():
                raise ServerError(f"{what}: the answer did not finish within {budget.timeout_s:g}s "
                                  f"({len(buf):,} bytes read, still coming: the server trickles)")
    except (requests.RequestException, OSError) as e:
        if budget.late():
            raise ServerError(f"{what}: the answer did not finish within {budget.timeout_s:g}s "
                              f"({len(buf):,} bytes read)") from None
        raise ServerError(f"{what}: the answer broke off after {len(buf):,} bytes: {str(e)[:160]}") from None
    return bytes(buf)


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]      # the server's JSON (a non-object answer as {"_": it})
    elapsed: float
    request: dict[str, Any]

    def evidence(self) -> str:
        return redact(json.dumps({"request": self.request, "status": self.status, "response": self.body},
                                 indent=1)[:20000])


class Client:
    def __init__(self, base_url: str, model: str, timeout: float = 120.0, api_key: str | None = None):
        import requests
        self.base_url, self.model, self.timeout = base_url.rstrip("/"), model, timeout
        self.session = requests.Session()
        self.session.trust_env = False  # loopback and rack addresses: never through a proxy
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"

    def __repr__(self) -> str:
        return f"Client({self.base_url}, model={self.model!r})"

    def request(self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float | None = None) -> Reply:
        import requests
        import urllib3
        url = self.base_url + path
        t0 = time.monotonic()
        for attempt in (1, 2):
            try:
                r = self.session.request(method, url, json=body, timeout=timeout or self.timeout, stream=True)
                break
            except requests.Timeout:
                raise ServerError(f"{method} {url}: no answer within {timeout or self.timeout:g}s") from None
            except requests.ConnectionError as e:
                # A kept-alive connection the server closed as it was reused (uvicorn closes idle
                # ones after 5 s) is not a dead server: once more, on a new connection. Refused
                # or reset again: the server is not there.
                if attempt == 1 and e.args and isinstance(e.args[0], urllib3.exceptions.ProtocolError):
                    continue
                reason = str(e.args[0]) if e.args else str(e)
                raise ServerError(f"{method} {url}: cannot connect ({reason.split(':')[-1].strip()[:120]})") from None
        try:
            data = _json_of(_body(r, Budget(f"{method} {url}", body, timeout or self.timeout), f"{method} {url}"),
                            f"{method} {url}", r.status_code)
        finally:
            r.close()
        if not isinstance(data, dict):
            data = {"_": data}
        return Reply(r.status_code, data, time.monotonic() - t0, body or {})

    # --- routes ---------------------------------------------------------------------------
    def models(self) -> Reply:
        return self.request("GET", "/v1/models")

    def model_ids(self) -> list[str]:
        reply = self.models()
        if reply.status != 200:
            raise ServerError(f"GET {self.base_url}/v1/models: HTTP {reply.status}: {json.dumps(reply.body)[:160]}")
        try:
            return [m["id"] for m in reply.body["data"]]
        except (KeyError, TypeError):
            raise ServerError(f"GET {self.base_url}/v1/models: unexpected body {json.dumps(reply.body)[:160]}") from None

    def completion(self, prompt: str, max_tokens: int = 16, temperature: float = 0.0,
                   timeout: float | None = None, **extra: Any) -> Reply:
        """extra: more request fields, e.g. logprobs=1, or data_parallel_rank=r (ATOM's routing
        hint, CompletionRequest.data_parallel_rank in atom/entrypoints/openai/protocol.py)."""
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature, **extra}
        return self.request("POST", "/v1/completions", body, timeout)

    def chat(self, messages: list[dict[str, Any]], max_tokens: int = 16, temperature: float = 0.0,
             timeout: float | None = None, **extra: Any) -> Reply:
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                "temperature": temperature, **extra}
        return self.request("POST", "/v1/chat/completions", body, timeout)

    def post(self, path: str, body: dict[str, Any] | None = None, timeout: float | None = None) -> Reply:
        return self.request("POST", path, body or {}, timeout)

    def stream(self, path: str, body: dict[str, Any], timeout: float | None = None, handle: StreamHandle | None = None,
               stop_when: Callable[[str], str | None] | None = None) -> Reply:
        """POST with `"stream": true` and read the server-sent events to the end: the Reply holds
        the answer assembled as a non-streamed body (choices[0].text, or .message.content and
        .reasoning_content; the first finish_reason; usage.completion_tokens = chunks read; pieces:
        each chunk's text; server_usage: the usage the server sent, else None). `timeout`
        bounds the whole answer. `handle.cancel()` from another thread closes the stream: the
        server stops generating for it (transformers serve, vLLM-style engines) and this call
        raises ServerError("cancelled"). A server that answers plain JSON is read as JSON.
        `stop_when(text so far)` (the answer's text, or content then reasoning) is asked after each
        chunk: a reason stops reading there, closes the stream (the server stops generating) and
        the Reply carries it as body["stopped"] (finish_reason None: the answer was cut short)."""
        import requests
        url = self.base_url + path
        body = {**body, "stream": True}
        limit = timeout or self.timeout
        t0 = time.monotonic()
        handle = handle or StreamHandle()
        try:
            r = self.session.post(url, json=body, timeout=limit, stream=True)
        except requests.Timeout:
            raise ServerError(f"POST {url}: no answer within {limit:g}s") from None
        except requests.ConnectionError as e:
            reason = str(e.args[0]) if e.args else str(e)
            raise ServerError(f"POST {url}: cannot connect ({reason.split(':')[-1].strip()[:120]})") from None
        handle.attach(r)
        budget = Budget(f"POST {url}", body, limit)
        try:
            if r.status_code != 200 or "text/event-stream" not in r.headers.get("content-type", ""):
                data = _json_of(_body(r, budget, f"POST {url}"), f"POST {url}", r.status_code)
                return Reply(r.status_code, data if isinstance(data, dict) else {"_": data}, time.monotonic() - t0, body)
            text, content, reasoning, finish, n, pieces, usage, stopped = [], [], [], None, 0, [], None, None
            said, told, thought = "", "", ""   # what stop_when reads, grown a chunk at a time (not joined per chunk)
            for raw in _lines(r, budget):
                handle.progress = time.monotonic()
                if handle.cancelled:
                    break
                if time.monotonic() - t0 > limit:
                    raise ServerError(f"POST {url}: the answer did not finish within {limit:g}s ({n} chunks read, "
                                      f"{budget.read:,} bytes)")
                try:
                    line = raw.decode("utf-8").strip() if raw else ""
                except UnicodeDecodeError as e:
                    raise ServerError(f"POST {url}: a stream line is not UTF-8 (byte 0x{raw[e.start]:02x} at offset "
                                      f"{e.start}): {raw[:80]!r}") from None
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    event = json.loads(data)
                    usage = event.get("usage") or usage  # ATOM: a last chunk with usage and empty choices
                    if event["choices"] == [] and usage:
                        continue
                    c = event["choices"][0]
                except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                    raise ServerError(f"POST {url}: a stream event is not an OpenAI chunk: {data[:160]!r}") from None
                delta = c.get("delta") or {}
                piece = (c.get("text") or "") + (delta.get("content") or "")
                think = delta.get("reasoning_content") or delta.get("reasoning") or ""
                text.append(c.get("text") or "")
                content.append(delta.get("content") or "")
                reasoning.append(think)
                n += 1 if (piece or think) else 0
                budget.pieces(n)
                pieces.append(piece)
                finish = finish or c.get("finish_reason")  # the first: ATOM adds a "stop" chunk after any reason
                if stop_when is not None and (piece or think):
                    said += text[-1]       # "".join(text)
                    told += content[-1]    # "".join(content)
                    thought += think       # "".join(reasoning)
                    stopped = stop_when(said + told or thought)
                    if stopped:
                        break
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError, AttributeError, OSError,
                ValueError) as e:
            if handle.cancelled:
                raise ServerError(f"POST {url}: cancelled") from None
            raise ServerError(f"POST {url}: the stream broke after {time.monotonic() - t0:.1f}s: {e}") from None
        finally:
            r.close()
        if handle.cancelled:
            raise ServerError(f"POST {url}: cancelled")
        choice = ({"index": 0, "message": {"role": "assistant", "content": "".join(content),
                                           "reasoning_content": "".join(reasoning) or None}, "finish_reason": finish}
                  if "messages" in body else {"index": 0, "text": "".join(text), "finish_reason": finish})
        # usage: chunks read; the server's own report, when it sent one, as server_usage
        out = {"choices": [choice], "usage": {"completion_tokens": n}, "pieces": pieces, "server_usage": usage}
        if stopped:
            out["stopped"] = stopped
        return Reply(200, out, time.monotonic() - t0, body)


def _lines(r: requests.Response, budget: Budget) -> Iterator[bytes]:
    """The response's lines as they arrive, every byte counted against the budget: http.client's
    buffered readline (chunked or not) where there is one, else requests' byte-wise iter_lines. A
    line without an end is read READ_LINE bytes at a time (each counted): never held whole."""
    fp = getattr(r.raw, "_fp", None)
    if fp is None or not hasattr(fp, "readline"):
        for line in r.iter_lines(chunk_size=1, decode_unicode=False):
            budget.count(len(line) + 1)
            yield line
        return
    while True:
        line = fp.readline(READ_LINE)
        if not line:
            return
        budget.count(len(line))
        yield line.rstrip(b"\r\n")


READ_LINE = 1 << 20


class StreamHandle:
    """Cancel a stream from another thread: shut its socket down (a blocked read returns at once)
    and close the response, so the server sees the client go."""

    def __init__(self) -> None:
        import threading
        self._lock = threading.Lock()
        self._resp: requests.Response | None = None
        self.cancelled = False
        self.progress: float | None = None  # when the answer last moved (headers, a line of the stream)

    def attach(self, resp: requests.Response) -> None:
        self.progress = time.monotonic()
        with self._lock:
            self._resp = resp
            if self.cancelled:
                self._close()

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            self._close()

    def _close(self) -> None:
        import socket
        r = self._resp
        if r is None:
            return
        sock = getattr(getattr(r.raw, "_connection", None), "sock", None)
        if sock is None:
            fp = getattr(r.raw, "_fp", None)
            sock = getattr(getattr(getattr(fp, "fp", None), "raw", None), "_sock", None)
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            r.close()
        except Exception:  # noqa: BLE001 - closing a response another thread reads may race
            pass


def refusal(reply: Reply) -> str:
    """What a non-200 reply says, in both of ATOM's shapes: {"detail": ...} (FastAPI's
    HTTPException: 404 "Not Found" on the runbook's image, 400 "Requested model 'x' does not
    match server model 'y'" from validate_model on current main) and {"error": {"message"}}."""
    body = reply.body
    detail = body.get("detail")
    if detail is None and isinstance(body.get("error"), dict):
        detail = body["error"].get("message")
    if detail is None and body.get("object") == "error":
        detail = body.get("message")   # vLLM's ErrorResponse before the {"error": {...}} shape
    return f"HTTP {reply.status}: {detail if detail is not None else json.dumps(body)[:200]}"


def first_choice(reply: Reply, path: str) -> dict[str, Any]:
    """The first choice of a 200 reply, or a ServerError that says what came back instead."""
    if reply.status != 200:
        raise ServerError(f"POST {path}: {refusal(reply)}")
    try:
        choice: dict[str, Any] = reply.body["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise ServerError(f"POST {path}: no choices in the response: {json.dumps(reply.body)[:200]}") from None
    return choice
