"""The simulated ATOM server: one process per node, launched with the runbook's flags.

Every node logs its local DP ranks' boot in ATOM's format ("[atom HH:MM:SS] message"); the
node whose --data-parallel-rank is 0 also serves the OpenAI routes on --host:--server-port.
Behaviour comes from the sim state (faults) of the node it runs on.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import model
from .state import this_node

REASONING_TOKENS = 1500  # K3 reasons before it answers; GSM8K needs a large max_tokens


def log(msg: str) -> None:
    print(f"[atom {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="atom.entrypoints.openai_server")
    ap.add_argument("--model", required=True)
    ap.add_argument("--served-model-name", default=None)
    ap.add_argument("-tp", "--tensor-parallel-size", type=int, default=1)
    ap.add_argument("--data-parallel-size", type=int, default=1)
    ap.add_argument("--data-parallel-size-local", type=int, default=1)
    ap.add_argument("--data-parallel-rank", type=int, default=0)
    ap.add_argument("--data-parallel-master-ip", default="127.0.0.1")
    ap.add_argument("--max-model-len", type=int, default=None)
    ap.add_argument("--max-num-batched-tokens", type=int, default=16384)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    ap.add_argument("--torch-profiler-dir", default=None)
    ap.add_argument("--fake-eplb", action="store_true")
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--server-port", type=int, default=8000)
    args, _unknown = ap.parse_known_args(argv)
    return args


class Api(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sim: "SimServer"

    def log_message(self, *a):  # access log off (--disable_uvicorn_access_log)
        pass

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        n = int(self.headers.get("content-length") or 0)
        try:
            return json.loads(self.rfile.read(n) or b"{}")
        except json.JSONDecodeError:
            return {}

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
            if requested is not None and requested.rstrip("/") != s.model_name.rstrip("/"):
                return self._send(404, {"detail": "Not Found"})
            if self.path == "/v1/completions":
                return self._send(200, s.completion(body))
            return self._send(200, s.chat(body))
        if self.path == "/start_profile":
            return self._send(200, {"status": "success", "message": "Profiling started"})
        if self.path == "/stop_profile":
            return self._send(200, {"status": "success", "message": "Profiling stopped. Trace files generated.",
                                    "traces": []})
        self._send(404, {"detail": "Not Found"})


class SimServer:
    def __init__(self, args: argparse.Namespace, faults: set[str]):
        self.args, self.faults = args, faults
        self.model_name = args.model if "served-path" in faults or not args.served_model_name \
            else args.served_model_name
        self.started = time.time()
        self.lock = threading.Lock()

    def _usage(self, prompt_tokens: int, completion_tokens: int) -> dict:
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens}

    def completion(self, body: dict) -> dict:
        prompt = body.get("prompt", "")
        prompt = prompt[0] if isinstance(prompt, list) else prompt
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else stop
        gen = model.generate(prompt, int(body.get("max_tokens") or 16), self.faults, stop)
        lp = None
        if body.get("logprobs"):
            n = int(body["logprobs"])
            lp = {"tokens": gen.tokens, "token_logprobs": [x["logprob"] for x in gen.logprobs],
                  "top_logprobs": [dict(list(x["top"].items())[:n]) for x in gen.logprobs],
                  "text_offset": []}
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "text": gen.text, "logprobs": lp, "finish_reason": gen.finish_reason}],
                "usage": self._usage(len(model.tokenize(prompt)), len(gen.tokens))}

    def chat(self, body: dict) -> dict:
        msgs = body.get("messages") or []
        gen = model.chat(msgs, int(body.get("max_tokens") or body.get("max_completion_tokens") or 16),
                         self.faults, REASONING_TOKENS)
        msg = {"role": "assistant", "content": gen.content, "reasoning_content": gen.reasoning or None}
        prompt_tokens = sum(len(model.tokenize(str(m.get("content", "")))) for m in msgs)
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": gen.finish_reason}],
                "usage": self._usage(prompt_tokens, gen.completion_tokens)}


def boot_log(args: argparse.Namespace, node: dict) -> None:
    kwargs = {"model": args.model, "served_model_name": args.served_model_name,
              "tensor_parallel_size": args.tensor_parallel_size, "data_parallel_size": args.data_parallel_size,
              "max_model_len": args.max_model_len, "max_num_batched_tokens": args.max_num_batched_tokens,
              "gpu_memory_utilization": args.gpu_memory_utilization,
              "torch_profiler_dir": args.torch_profiler_dir, "fake_eplb": args.fake_eplb}
    log(f"Engine kwargs: {kwargs}")
    for local in range(args.data_parallel_size_local):
        gpu = node["gpus"][local % len(node["gpus"])]
        total = gpu["hbm_gib"] * 0.9995
        log(f"Memory budget: total_gpu={total:.2f}GB, free={total - 0.6:.2f}GB, "
            f"utilization={args.gpu_memory_utilization}, budget={total * args.gpu_memory_utilization:.2f}GB, "
            f"peak_torch=201.63GB, non_torch=2.10GB, cudagraph_est=3.50GB, safety=2.00GB, "
            f"available_for_kv=159.37GB, block_bytes=1179648, num_kvcache_blocks=145063")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    _, node, state = this_node()
    faults = set(state["server"]["faults"])
    boot_log(args, node)
    if args.data_parallel_rank != 0:
        log("compute-only node: waiting for requests from the API server")
        while True:
            time.sleep(3600)
    sim = SimServer(args, faults)
    handler = type("Handler", (Api,), {"sim": sim})
    httpd = ThreadingHTTPServer((args.host, args.server_port), handler)
    httpd.daemon_threads = True
    log("Server started successfully and ready to accept requests")
    httpd.serve_forever()


if __name__ == "__main__":
    main()
