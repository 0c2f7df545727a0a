"""The simulated ATOM server's OpenAI HTTP API (the head node serves it on --host:--server-port):
/health, /v1/models, /v1/completions, /v1/chat/completions (streamed or not), /start_profile,
/stop_profile. `SimServer` routes each request to a DP rank (the request's data_parallel_rank,
else the least loaded) and waits for it; a dead or stuck rank makes its requests hang while
/health stays 200, as on the real rack. The model's text comes from rackgate/sim/model.py.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import re
import threading
import time
import uuid

from .. import model
from ..httpjson import JsonHandler
from ..state import ServerState
from .ranks import hang, rank_call

REASONING_TOKENS = 1500  # K3 reasons before it answers; GSM8K needs a large max_tokens


STREAM_PIECE = re.compile(r"\s*\S+|\s+")  # pieces that join back to the text
FINAL = re.compile(r"#### (-?\d+)")  # a GSM8K answer's final line


class Api(JsonHandler):
    server_version = "uvicorn"
    sim: "SimServer"

    def _stream(self, reply: dict) -> None:
        """`"stream": true`: the reply as OpenAI server-sent events, one chunk a piece of text
        (`data: {...}` lines, then `data: [DONE]`), RACKGATE_SIM_TPOT_S seconds apart (a server
        slowed to a measured time per output token). A client that closes the stream stops the
        generation: the next write fails and nothing more is generated for it."""
        tpot = float(os.environ.get("RACKGATE_SIM_TPOT_S") or 0)
        choice = reply["choices"][0]
        chat = reply["object"] == "chat.completion"
        base = {"id": reply["id"], "object": "chat.completion.chunk" if chat else "text_completion",
                "created": reply["created"], "model": reply["model"]}
        pieces: list[tuple[str, str]] = []
        if chat:
            msg = choice["message"]
            pieces += [("reasoning_content", x) for x in STREAM_PIECE.findall(msg.get("reasoning_content") or "")]
            pieces += [("content", x) for x in STREAM_PIECE.findall(msg.get("content") or "")]
        else:
            pieces += [("text", x) for x in STREAM_PIECE.findall(choice.get("text") or "")]
            if pieces and "stream-drop-first" in self.sim.faults:
                pieces = pieces[1:]
            elif pieces and "stream-repeat-first" in self.sim.faults:
                pieces = pieces[:1] + pieces
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.end_headers()

        def event(c: dict) -> None:
            self.wfile.write(b"data: " + json.dumps({**base, "choices": [c]}).encode() + b"\n\n")
            self.wfile.flush()
        try:
            for field, x in pieces:
                if tpot:
                    time.sleep(tpot)
                c = {"index": 0, "delta": {field: x}} if chat else {"index": 0, "text": x}
                event({**c, "logprobs": None, "finish_reason": None})
            end = {"index": 0, "delta": {}} if chat else {"index": 0, "text": ""}
            event({**end, "logprobs": None, "finish_reason": choice["finish_reason"]})
            if not chat:  # as ATOM's stream_completion_response: a "stop" chunk, then usage with no choices
                event({**end, "logprobs": None, "finish_reason": "stop"})
                self.wfile.write(b"data: " + json.dumps({**base, "choices": [], "usage": reply["usage"]}).encode()
                                 + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client closed the stream
            self.close_connection = True

    def _body(self) -> dict:
        n = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
        except json.JSONDecodeError:
            return {}
        return body if isinstance(body, dict) else {}

    def do_GET(self):
        s = self.sim
        if self.path == "/health":
            return self._send(200, {"status": "ok"})
        if self.path == "/v1/models":
            return self._send(200, {"object": "list", "data": [
                {"id": s.model_name, "object": "model", "created": int(s.started), "owned_by": "atom"}]})
        self._send(404, {"detail": "Not Found"})

    def do_POST(self):
        s, body = self.sim, self._body()
        if self.path in ("/v1/completions", "/v1/chat/completions"):
            requested = body.get("model")
            if requested is not None and str(requested).rstrip("/") != s.model_name.rstrip("/"):
                if s.api == "main":  # validate_model() in atom/entrypoints/openai/api_server.py
                    return self._send(400, {"detail": f"Requested model '{requested}' does not match server "
                                                      f"model '{s.model_name}'"})
                return self._send(404, {"detail": "Not Found"})
            with s.lock:
                s.active += 1
            try:
                reply = s.completion(body) if self.path == "/v1/completions" else s.chat(body)
                s.batch_numerics(reply)
                if body.get("stream"):
                    return self._stream(reply)
                tpot = float(os.environ.get("RACKGATE_SIM_TPOT_S") or 0)
                if tpot:  # slowed as a streamed answer is: one time per output token
                    time.sleep(tpot * int((reply.get("usage") or {}).get("completion_tokens") or 0))
                return self._send(200, reply)
            except ValueError as e:  # value_error_handler
                return self._send(400, {"error": {"message": str(e), "type": "invalid_request_error", "code": 400}})
            finally:
                with s.lock:
                    s.active -= 1
        if self.path == "/start_profile":
            s.broadcast({"op": "profile", "action": "start"})
            return self._send(200, {"status": "success", "message": "Profiling started"})
        if self.path == "/stop_profile":
            traces = [r.get("trace") for r in s.broadcast({"op": "profile", "action": "stop"}) if r and r.get("trace")]
            return self._send(200, {"status": "success", "message": "Profiling stopped. Trace files generated.",
                                    "traces": traces})
        self._send(404, {"detail": "Not Found"})


FIRST_TOKEN_S = ServerState.first_token_s  # the healthy image's (the sim state may set another)
# The share of the first-token time a rank holds a request: the requests a rank holds at once are
# its batch (rackgate/sim/engine/ranks.py Batch), as an engine steps every request it runs together.
BATCH_WINDOW = 0.75
BLOCK = 16  # tokens of a KV-cache block (ATOM's --block-size default): the prefix cache's unit


def sampling(body: dict) -> list[str]:
    """The sampling fields a request sets (what the sampler sees besides greedy): top_k, top_p,
    temperature > 0, logprobs, stop."""
    out = []
    if body.get("top_k") not in (None, -1, 0):
        out.append("top_k")
    if body.get("top_p") not in (None, 1, 1.0):
        out.append("top_p")
    if float(body.get("temperature") if body.get("temperature") is not None else 1.0) > 0:
        out.append("temperature")
    if body.get("logprobs") not in (None, False, 0) or body.get("top_logprobs"):
        out.append("logprobs")
    if body.get("stop"):
        out.append("stop")
    return out


def blocks(prompt: str) -> list[str]:
    """The prompt's full KV-cache blocks as the prefix cache keys them: each block's hash chained
    on the blocks before it (a block matches only with the whole prefix before it)."""
    toks, out, h = model.tokenize(prompt), [], ""
    for i in range(BLOCK, len(toks) + 1, BLOCK):
        h = hashlib.blake2b((h + "".join(toks[i - BLOCK:i])).encode(), digest_size=6).hexdigest()
        out.append(h)
    return out


def pace_until(t: float) -> None:
    """Sleep until monotonic time t (no sleep when this machine was already slower)."""
    left = t - time.monotonic()
    if left > 0:
        time.sleep(left)


class SimServer:
    def __init__(self, args: argparse.Namespace, server: ServerState):
        self.args, self.server = args, server
        behaviours = server.behaviours()
        self.behaviours = behaviours
        self.faults = behaviours.output  # the model's output behaviours
        self.api = server.api
        self.model_name = args.served_model_name or args.model
        self.started = time.time()
        self.rr = itertools.count()
        self.lock = threading.Lock()
        self.inflight: dict[int, int] = {}
        self.active = 0  # requests being answered (streamed ones until their last chunk)
        self.delay_s = behaviours.slow_server.delay_s if behaviours.slow_server else 0.0
        self.first_token_s = server.first_token_s

    def batch_numerics(self, reply: dict) -> None:
        """Fault batch-numerics: with the batches full (at least one request per DP rank being
        answered) a GSM8K answer's final number comes out one off; fluent text otherwise."""
        if "batch-numerics" not in self.faults or self.active < self.args.data_parallel_size:
            return
        c = reply["choices"][0]
        off = lambda m: f"#### {int(m.group(1)) + 1}"
        if "message" in c:
            c["message"]["content"] = FINAL.sub(off, c["message"].get("content") or "")
        else:
            c["text"] = FINAL.sub(off, c.get("text") or "")

    def broadcast(self, req: dict) -> list:
        return [rank_call(r, req, wait_s=10) for r in range(self.args.data_parallel_size)]

    def forward(self, body: dict, prompt_tokens: int, max_tokens: int, prompt: str = "") -> frozenset[str]:
        """Route to a DP rank (the request's data_parallel_rank, else the least loaded) and wait, at
        least the image's first-token time from the request's arrival (pace_until). Returns the
        output behaviours of the answer (the server's, and those of the rank that served it)."""
        arrived = time.monotonic()
        a = self.args
        hint = body.get("data_parallel_rank")
        if hint is not None:
            if not isinstance(hint, int) or not 0 <= hint < a.data_parallel_size:
                raise ValueError(f"Invalid data_parallel_rank={hint}; local_engine_count={a.data_parallel_size}")
            rank = hint
        else:  # load-aware, as ATOM's default: the fewest requests in flight, ties round robin
            start = next(self.rr)
            with self.lock:
                rank = min(((self.inflight.get(r, 0), (r - start) % a.data_parallel_size, r)
                            for r in range(a.data_parallel_size)))[2]
        if a.max_model_len is not None and prompt_tokens + max_tokens > a.max_model_len:
            raise ValueError(f"prompt ({prompt_tokens} tokens) plus max_tokens ({max_tokens}) exceeds "
                             f"max_model_len ({a.max_model_len})")
        with self.lock:
            self.inflight[rank] = self.inflight.get(rank, 0) + 1
        # the engine sees the request's sampling fields and its prompt's blocks (the prefix cache), and
        # batches it with whatever else the rank runs meanwhile: the rank holds it until most of the
        # first-token time has passed (no later than the answer would come anyway)
        reply = rank_call(rank, {"op": "forward", "prompt_tokens": prompt_tokens, "max_tokens": max_tokens,
                                 "delay_s": self.delay_s, "decode_s": self.server.decode_s_per_token,
                                 "sampling": sampling(body), "blocks": blocks(prompt),
                                 "until": arrived + BATCH_WINDOW * self.first_token_s})
        with self.lock:
            self.inflight[rank] -= 1
        if reply is None:
            hang()  # the rank is gone or stuck: the request never completes
        pace_until(arrived + self.first_token_s)
        out = self.behaviours.output_on(rank)
        return out | {reply["corrupt"]} if reply.get("corrupt") else out

    def _usage(self, prompt_tokens: int, completion_tokens: int) -> dict:
        completion_tokens += 3 if "usage-over" in self.faults else 0
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens}

    def _finish(self, gen: model.Generation) -> str:
        # /v1/completions passes the engine's reason through on current main; the image (and
        # chat everywhere) speaks OpenAI's stop/length.
        return gen.engine_reason or gen.finish_reason if self.api == "main" else gen.finish_reason

    def completion(self, body: dict) -> dict:
        prompt = body.get("prompt", "")
        prompt = prompt[0] if isinstance(prompt, list) else str(prompt)
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else stop
        max_tokens = int(body.get("max_tokens") or 16)
        n_prompt = len(model.tokenize(prompt))
        faults = self.forward(body, n_prompt, max_tokens, prompt)
        gen = model.generate(prompt, max_tokens, faults, stop)
        lp = None
        if body.get("logprobs") and self.api != "main":  # CompletionRequest on main drops logprobs
            n = int(body["logprobs"])
            lp = {"tokens": gen.tokens, "token_logprobs": [x["logprob"] for x in gen.logprobs],
                  "top_logprobs": [dict(list(x["top"].items())[:n]) for x in gen.logprobs],
                  "text_offset": []}
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "text": gen.text, "logprobs": lp, "finish_reason": self._finish(gen)}],
                "usage": self._usage(n_prompt, len(gen.tokens))}

    def chat(self, body: dict) -> dict:
        msgs = body.get("messages") or []
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        prompt_tokens = sum(len(model.tokenize(str(m.get("content", "")))) for m in msgs if isinstance(m, dict))
        faults = self.forward(body, prompt_tokens, max_tokens,
                              "".join(str(m.get("content", "")) for m in msgs if isinstance(m, dict)))
        reasoning = REASONING_TOKENS // 2 if "shorter-answers" in faults else REASONING_TOKENS
        gen = model.chat(msgs, max_tokens, faults, reasoning)
        msg = {"role": "assistant", "content": gen.content, "reasoning_content": gen.reasoning or None}
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": gen.finish_reason}],
                "usage": self._usage(prompt_tokens, gen.completion_tokens)}
