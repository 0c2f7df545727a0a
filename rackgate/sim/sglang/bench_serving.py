"""A stand-in for `python3 -m sglang.bench_serving` on the simulated rack.

It really sends the requests (random prompts of --random-input-len words, --max-concurrency at a
time, OpenAI completions as `--backend sglang-oai` does) and reports the way SGLang's client does
(sglang/bench_serving.py): the "Serving Benchmark Result" banner, its "{:<40} {:<10}" rows with
its own labels ("Backend:", "Max request concurrency:" reading "not set" when unset, "Total
generated tokens (retokenized):"), no failure row, and one JSON record per run APPENDED to
--output-file (default `{backend}_{MMDD}_{num_prompts}_{in}_{out}.jsonl`), with output_lens,
generated_texts and errors when --output-details is given. A request is successful when the server
answered 200, whatever its text: its output_len is the usage's completion_tokens (the requested
length when the server sends no usage), the retokenized length is its text's own (words here, the
model's tokenizer there). Absolute paths are inside the container (the node's container root).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import requests

from ..benchmark_serving import _container_path, row


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench_serving")
    ap.add_argument("--backend", default="sglang")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--model", default=None)
    ap.add_argument("--served-model-name", default=None)
    ap.add_argument("--tokenizer", default=None)
    ap.add_argument("--dataset-name", default="sharegpt")
    ap.add_argument("--random-input-len", type=int, default=1024)
    ap.add_argument("--random-output-len", type=int, default=1024)
    ap.add_argument("--random-range-ratio", type=float, default=0.0)
    ap.add_argument("--num-prompts", type=int, default=1000)
    ap.add_argument("--max-concurrency", type=int, default=None)
    ap.add_argument("--request-rate", type=float, default=float("inf"))
    ap.add_argument("--output-file", default=None)
    ap.add_argument("--output-details", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    return ap.parse_known_args(argv)[0]


def one(url: str, model: str, prompt: str, max_tokens: int) -> dict:
    t0 = time.perf_counter()
    try:
        r = requests.post(url, json={"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0,
                                     "ignore_eos": True}, timeout=120)
        lat = time.perf_counter() - t0
        if r.status_code != 200:
            return {"success": False, "error": r.reason or "", "latency": lat, "text": "", "output_len": 0}
        body = r.json()
        usage = body.get("usage") or {}
        text = body["choices"][0]["text"]
        return {"success": True, "error": "", "latency": lat, "ttft": lat, "text": text,
                "output_len": usage.get("completion_tokens", max_tokens)}
    except requests.RequestException as e:
        return {"success": False, "error": f"{type(e).__name__}: {e}", "latency": time.perf_counter() - t0,
                "text": "", "output_len": 0}


def main(argv: list[str] | None = None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    print(f"benchmark_args={a}")
    base = a.base_url or f"http://{a.host}:{a.port}"
    model = a.served_model_name or a.model
    rnd = random.Random(a.seed)
    words = ["alpha", "river", "stone", "cloud", "seven", "north", "glass", "field"]
    lens = [a.random_input_len for _ in range(a.num_prompts)]
    prompts = [" ".join(rnd.choice(words) for _ in range(n)) for n in lens]
    print("Starting warmup with 1 sequences...\nWarmup completed with 1 sequences. Starting main benchmark run...")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=a.max_concurrency or 64) as pool:
        outs = list(pool.map(lambda p: one(base + "/v1/completions", model, p, a.random_output_len), prompts))
    dur = time.perf_counter() - t0
    ok = [o for o in outs if o["success"]]
    output_lens = [o["output_len"] if o["success"] else 0 for o in outs]
    retok = [len(o["text"].split()) if o["success"] else 0 for o in outs]
    total_in = sum(n for n, o in zip(lens, outs) if o["success"])
    total_out, total_retok = sum(output_lens), sum(retok)
    lat = sorted(o["latency"] * 1000 for o in ok) or [0.0]
    print("\n{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    print("{:<40} {:<10}".format("Backend:", a.backend))
    print("{:<40} {:<10}".format("Traffic request rate:", a.request_rate))
    print("{:<40} {:<10}".format("Max request concurrency:", a.max_concurrency if a.max_concurrency else "not set"))
    print("{:<40} {:<10}".format("Successful requests:", len(ok)))
    row("Benchmark duration (s):", dur)
    print("{:<40} {:<10}".format("Total input tokens:", total_in))
    print("{:<40} {:<10}".format("Total generated tokens:", total_out))
    print("{:<40} {:<10}".format("Total generated tokens (retokenized):", total_retok))
    row("Request throughput (req/s):", len(ok) / dur)
    row("Input token throughput (tok/s):", total_in / dur)
    row("Output token throughput (tok/s):", total_out / dur)
    row("Total token throughput (tok/s):", (total_in + total_out) / dur)
    row("Concurrency:", sum(o["latency"] for o in ok) / dur)
    print("{s:{c}^{n}}".format(s="End-to-End Latency", n=50, c="-"))
    row("Mean E2E Latency (ms):", sum(lat) / len(lat))
    row("Median E2E Latency (ms):", lat[len(lat) // 2])
    print("{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"))
    row("Mean TTFT (ms):", sum(lat) / len(lat))
    row("Median TTFT (ms):", lat[len(lat) // 2])
    print("=" * 50)
    result = {"backend": a.backend, "dataset_name": a.dataset_name, "request_rate": a.request_rate,
              "max_concurrency": a.max_concurrency, "sharegpt_output_len": None,
              "random_input_len": a.random_input_len, "random_output_len": a.random_output_len,
              "random_range_ratio": a.random_range_ratio, "duration": dur, "completed": len(ok),
              "total_input_tokens": total_in, "total_output_tokens": total_out,
              "total_output_tokens_retokenized": total_retok, "request_throughput": len(ok) / dur,
              "input_throughput": total_in / dur, "output_throughput": total_out / dur,
              "mean_e2e_latency_ms": sum(lat) / len(lat), "median_e2e_latency_ms": lat[len(lat) // 2],
              "mean_ttft_ms": sum(lat) / len(lat), "median_ttft_ms": lat[len(lat) // 2],
              "concurrency": sum(o["latency"] for o in ok) / dur, "accept_length": None}
    if a.output_details:
        result.update({"input_lens": lens, "output_lens": output_lens, "ttfts": [o.get("ttft", 0.0) for o in outs],
                       "itls": [[] for _ in outs], "generated_texts": [o["text"] for o in outs],
                       "errors": [o["error"] for o in outs]})
    name = a.output_file or (f"{a.backend}_{datetime.now().strftime('%m%d')}_{a.num_prompts}_{a.random_input_len}_"
                             f"{a.random_output_len}.jsonl")
    path = _container_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as out:  # SGLang appends one record per run
        out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
