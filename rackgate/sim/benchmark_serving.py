"""A stand-in for `python3 -m atom.benchmarks.benchmark_serving` on the simulated rack.

It really sends the requests (random prompts of --random-input-len words, --max-concurrency
at a time) to the server named by --host/--port or --base-url, and reports the way ATOM's
benchmark does: the "Serving Benchmark Result" table with ATOM's labels and widths, a
`UserWarning: All requests failed ...` when nothing completed, exit code 0 either way, and with
--save-result a JSON with ATOM's field names (no failure count: failed = num_prompts - completed).
Absolute paths are inside the container (the node's container root on the sim).

SIM_OLD_CLIENT (fault bench-old-partial): an older benchmark_serving, whose table has no
"FAILED requests" row (the failed requests are simply not counted). --random-range-ratio r is
read as those releases read it: input lengths drawn from [input_len * r, input_len].

SIM_PER_GPU (fault bench-per-gpu): also write ATOM's CI-style tput_per_gpu, which divides by
tp x pp x pcp and not by DP (atomesh process_result.py).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import requests


def _container_path(p: str) -> Path:
    node = os.environ.get("RACKGATE_SIM_NODE")
    return Path(node) / "container" / p.lstrip("/") if node and p.startswith("/") else Path(p)


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="benchmark_serving")
    ap.add_argument("--backend", default="vllm")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--endpoint", default="/v1/completions")
    ap.add_argument("--model", required=True)
    ap.add_argument("--served-model-name", default=None)
    ap.add_argument("--tokenizer", default=None)
    ap.add_argument("--trust-remote-code", action="store_true")
    ap.add_argument("--dataset-name", default="random")
    ap.add_argument("--random-input-len", type=int, default=1024)
    ap.add_argument("--random-output-len", type=int, default=128)
    ap.add_argument("--random-range-ratio", type=float, default=0.0)
    ap.add_argument("--num-prompts", type=int, default=1000)
    ap.add_argument("--max-concurrency", type=int, default=None)
    ap.add_argument("--ignore-eos", action="store_true")
    ap.add_argument("--percentile-metrics", default="ttft,tpot,itl")
    ap.add_argument("--metric-percentiles", default="99")
    ap.add_argument("--save-result", action="store_true")
    ap.add_argument("--save-detailed", action="store_true")
    ap.add_argument("--result-dir", default=None)
    ap.add_argument("--result-filename", default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_known_args(argv)[0]


def one(url: str, model: str, prompt: str, max_tokens: int, ignore_eos: bool) -> dict:
    t0 = time.perf_counter()
    try:
        r = requests.post(url, json={"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                                     "ignore_eos": ignore_eos}, timeout=120)
        lat = time.perf_counter() - t0
        if r.status_code != 200:
            return {"success": False, "error": f"HTTP {r.status_code}: {r.text[:200]}", "latency": lat}
        body = r.json()
        n = (body.get("usage") or {}).get("completion_tokens") or 0
        return {"success": True, "error": "", "latency": lat, "ttft": lat / max(1, n), "output_tokens": n,
                "text": body["choices"][0]["text"]}
    except requests.RequestException as e:
        return {"success": False, "error": f"{type(e).__name__}: {e}", "latency": time.perf_counter() - t0}


def row(label: str, value, fmt: str = "{:<40} {:<10.2f}") -> None:
    print(fmt.format(label, value))


def main(argv: list[str] | None = None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    print(a)
    base = a.base_url or f"http://{a.host}:{a.port}"
    model = a.served_model_name or a.model
    rnd = random.Random(a.seed)
    words = ["alpha", "river", "stone", "cloud", "seven", "north", "glass", "field"]
    low = int(a.random_input_len * a.random_range_ratio) if 0 < a.random_range_ratio < 1 else a.random_input_len
    lens = [rnd.randint(low, a.random_input_len) for _ in range(a.num_prompts)]
    prompts = [" ".join(rnd.choice(words) for _ in range(n)) for n in lens]
    print("Starting main benchmark run...")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=a.max_concurrency or 64) as pool:
        outs = list(pool.map(lambda p: one(base + a.endpoint, model, p, a.random_output_len, a.ignore_eos), prompts))
    dur = time.perf_counter() - t0
    ok = [o for o in outs if o["success"]]
    total_in = sum(n for n, o in zip(lens, outs) if o["success"])
    total_out = sum(o["output_tokens"] for o in ok)
    if not ok:
        warnings.warn("All requests failed. This is likely due to a misconfiguration on the benchmark arguments.",
                      stacklevel=1)
    lat = sorted(o["latency"] * 1000 for o in ok) or [0.0]
    ttft = sorted(o["ttft"] * 1000 for o in ok) or [0.0]
    # TPOT as benchmark_serving defines it: (latency - ttft) / (output tokens - 1), per request
    tpot = sorted((o["latency"] - o["ttft"]) * 1000 / (o["output_tokens"] - 1) for o in ok
                  if o["output_tokens"] > 1) or [0.0]
    print("{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    print("{:<40} {:<10}".format("Successful requests:", len(ok)))
    failed = [o for o in outs if not o["success"]]
    if failed and not os.environ.get("SIM_OLD_CLIENT"):
        print("{:<40} {:<10}".format("FAILED requests:", len(failed)))
        print(f"{'':4}{len(failed):<8} {failed[0]['error'].splitlines()[-1][:110]}")
    row("Benchmark duration (s):", dur)
    print("{:<40} {:<10}".format("Total input tokens:", total_in))
    print("{:<40} {:<10}".format("Total generated tokens:", total_out))
    row("Request throughput (req/s):", len(ok) / dur)
    row("Output token throughput (tok/s):", total_out / dur)
    row("Total Token throughput (tok/s):", (total_in + total_out) / dur)
    row("Concurrency:", sum(o["latency"] for o in ok) / dur)
    print("{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"))
    row("Mean TTFT (ms):", sum(ttft) / len(ttft))
    row("Median TTFT (ms):", ttft[len(ttft) // 2])
    print("{s:{c}^{n}}".format(s="Time per Output Token (excl. 1st token)", n=50, c="-"))
    row("Mean TPOT (ms):", sum(tpot) / len(tpot))
    row("Median TPOT (ms):", tpot[len(tpot) // 2])
    print("{s:{c}^{n}}".format(s="End-to-end Latency", n=50, c="-"))
    row("Mean E2EL (ms):", sum(lat) / len(lat))
    row("Median E2EL (ms):", lat[len(lat) // 2])
    print("=" * 50)
    if a.save_result:
        result = {"date": datetime.now().strftime("%Y%m%d-%H%M%S"), "backend": a.backend, "model_id": a.model,
                  "tokenizer_id": a.tokenizer or a.model, "best_of": 1, "num_prompts": a.num_prompts,
                  "request_rate": "inf", "burstiness": 1.0, "max_concurrency": a.max_concurrency,
                  "duration": dur, "completed": len(ok), "total_input_tokens": total_in,
                  "total_output_tokens": total_out, "request_throughput": len(ok) / dur,
                  "request_goodput:": None, "output_throughput": total_out / dur,
                  "total_token_throughput": (total_in + total_out) / dur,
                  "concurrency": sum(o["latency"] for o in ok) / dur, "accept_length": None,
                  "acceptance_rate": None, "mean_ttft_ms": sum(ttft) / len(ttft),
                  "median_ttft_ms": ttft[len(ttft) // 2], "mean_tpot_ms": sum(tpot) / len(tpot),
                  "median_tpot_ms": tpot[len(tpot) // 2], "mean_e2el_ms": sum(lat) / len(lat),
                  "median_e2el_ms": lat[len(lat) // 2]}
        if a.save_detailed:
            result.update({"output_lens": [o.get("output_tokens", 0) for o in outs],
                           "errors": [o["error"] for o in outs]})
        if os.environ.get("SIM_PER_GPU"):
            result["tput_per_gpu"] = result["total_token_throughput"] / 1  # tp x pp x pcp = 1 x 1 x 1
        name = a.result_filename or f"{a.backend}-infqps-{a.model.split('/')[-1]}-{result['date']}.json"
        path = _container_path(os.path.join(a.result_dir, name) if a.result_dir else name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
