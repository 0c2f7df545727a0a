"""An OpenAI-protocol client for ATOM: explicit timeouts, no silent retries, one-line errors."""
from __future__ import annotations

from ..errors import CouldNotObserve

import json
import time
from dataclasses import dataclass

import requests

from ..report.secrets import redact


class ServerError(CouldNotObserve):
    """The server could not be asked (refused, timed out, non-JSON): one line, no traceback."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict
    elapsed: float
    request: dict

    def evidence(self) -> str:
        return redact(json.dumps({"request": self.request, "status": self.status, "response": self.body},
                                 indent=1)[:20000])


class Client:
    def __init__(self, base_url: str, model: str, timeout: float = 120.0, api_key: str | None = None):
        self.base_url, self.model, self.timeout = base_url.rstrip("/"), model, timeout
        self.session = requests.Session()
        self.session.trust_env = False  # loopback and rack addresses: never through a proxy
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"

    def __repr__(self) -> str:
        return f"Client({self.base_url}, model={self.model!r})"

    def request(self, method: str, path: str, body: dict | None = None, timeout: float | None = None) -> Reply:
        url = self.base_url + path
        t0 = time.monotonic()
        try:
            r = self.session.request(method, url, json=body, timeout=timeout or self.timeout)
        except requests.Timeout:
            raise ServerError(f"{method} {url}: no answer within {timeout or self.timeout:g}s") from None
        except requests.ConnectionError as e:
            reason = str(e.args[0]) if e.args else str(e)
            raise ServerError(f"{method} {url}: cannot connect ({reason.split(':')[-1].strip()[:120]})") from None
        try:
            data = r.json()
        except ValueError:
            raise ServerError(f"{method} {url}: non-JSON response (HTTP {r.status_code}): {r.text[:160]!r}") from None
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
                   timeout: float | None = None, **extra) -> Reply:
        """extra: more request fields, e.g. logprobs=1, or data_parallel_rank=r (ATOM's routing
        hint, CompletionRequest.data_parallel_rank in atom/entrypoints/openai/protocol.py)."""
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature, **extra}
        return self.request("POST", "/v1/completions", body, timeout)

    def chat(self, messages: list[dict], max_tokens: int = 16, temperature: float = 0.0,
             timeout: float | None = None, **extra) -> Reply:
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                "temperature": temperature, **extra}
        return self.request("POST", "/v1/chat/completions", body, timeout)

    def post(self, path: str, body: dict | None = None, timeout: float | None = None) -> Reply:
        return self.request("POST", path, body or {}, timeout)


def refusal(reply: Reply) -> str:
    """What a non-200 reply says, in both of ATOM's shapes: {"detail": ...} (FastAPI's
    HTTPException: 404 "Not Found" on the runbook's image, 400 "Requested model 'x' does not
    match server model 'y'" from validate_model on current main) and {"error": {"message"}}."""
    body = reply.body
    detail = body.get("detail")
    if detail is None and isinstance(body.get("error"), dict):
        detail = body["error"].get("message")
    return f"HTTP {reply.status}: {detail if detail is not None else json.dumps(body)[:200]}"


def first_choice(reply: Reply, path: str) -> dict:
    """The first choice of a 200 reply, or a ServerError that says what came back instead."""
    if reply.status != 200:
        raise ServerError(f"POST {path}: {refusal(reply)}")
    try:
        return reply.body["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise ServerError(f"POST {path}: no choices in the response: {json.dumps(reply.body)[:200]}") from None
