"""Benchmark clients whose answers are empty, and SGLang's bench_serving as a client (probes/bench.py,
gates/bench.py `empty_share`), on output in the clients' own formats: SGLang's bench_serving
(sglang/bench_serving.py: its "Serving Benchmark Result" rows and labels, the record it appends to
--output-file as one JSON line per run, output_lens / generated_texts / errors with
--output-details; a request is successful on HTTP 200 whatever its text, its output_len the
usage's completion_tokens or the length asked for), `vllm bench serve` (benchmark_serving's table:
`Total generated tokens: 0`), mutated as console output reaches the suite (hypothesis)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackgate.gates import bench as gate
from rackgate.probes import bench as probe

from ..properties.mutate import SETTINGS

pytestmark = pytest.mark.unit


def sglang_table(completed: int, generated: int, retokenized: int) -> str:
    out = ["", "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")]
    rows: list[tuple[str, object]] = [
        ("Backend:", "sglang-oai"), ("Traffic request rate:", "inf"), ("Max request concurrency:", "not set"),
        ("Successful requests:", completed), ("Benchmark duration (s):", 61.27), ("Total input tokens:", 32768),
        ("Total generated tokens:", generated), ("Total generated tokens (retokenized):", retokenized),
        ("Request throughput (req/s):", 0.52), ("Input token throughput (tok/s):", 534.81),
        ("Output token throughput (tok/s):", generated / 61.27), ("Total token throughput (tok/s):", 1069.62),
        ("Concurrency:", 7.93)]
    for label, v in rows:
        out.append("{:<40} {:<10.2f}".format(label, v) if isinstance(v, float) else "{:<40} {:<10}".format(label, v))
    out += ["{s:{c}^{n}}".format(s="End-to-End Latency", n=50, c="-"),
            "{:<40} {:<10.2f}".format("Mean E2E Latency (ms):", 15230.11), "=" * 50]
    return "\n".join(out)


def sglang_record(texts: list[str], errors: list[str] | None = None, asked: int = 1024) -> dict:
    errors = errors or [""] * len(texts)
    ok = [t for t, e in zip(texts, errors) if not e]
    return {"backend": "sglang-oai", "dataset_name": "random", "request_rate": "inf", "max_concurrency": 8,
            "duration": 61.27, "completed": len(ok), "total_input_tokens": 1024 * len(ok),
            "total_output_tokens": asked * len(ok), "total_output_tokens_retokenized": sum(len(t.split()) for t in ok),
            "request_throughput": 0.52, "input_throughput": 534.81, "output_throughput": 534.81,
            "mean_ttft_ms": 830.2, "median_ttft_ms": 801.0, "concurrency": 7.93, "accept_length": None,
            "output_lens": [asked if not e else 0 for e in errors], "generated_texts": texts, "errors": errors}


OLD_RUN = json.dumps(sglang_record(["fine words"] * 4))  # an earlier run's line: the file is appended to
SGLANG_CMD = ("python3 -m sglang.bench_serving --backend sglang-oai --host 10.0.0.1 --port 8000 --model moonshotai/"
              "Kimi-K3 --dataset-name random --random-input-len 1024 --random-output-len 1024 --num-prompts 32 "
              "--max-concurrency 8 --output-file /tmp/rackgate/bench/result.json --output-details")
VLLM_CMD = ("vllm bench serve --backend vllm --base-url http://10.0.0.1:8000 --model moonshotai/Kimi-K3 "
            "--dataset-name random --num-prompts 64 --save-result")


def test_the_clients_are_told_apart_by_their_command():
    assert probe.command(SGLANG_CMD).tool == "sglang.bench_serving"
    assert probe.command(SGLANG_CMD).asked == ("--num-prompts", 32)
    assert probe.command(VLLM_CMD).tool == "vllm bench serve" and probe.command(VLLM_CMD).asked == ("--num-prompts", 64)
    assert probe.command("/opt/venv/bin/vllm bench serve --model m --num-prompts 8").tool == "vllm bench serve"
    assert probe.command("python3 -m atom.benchmarks.benchmark_serving --model m").tool == "benchmark_serving"


def test_a_healthy_sglang_run_reads_the_last_record_of_its_appended_file():
    texts = ["the river runs"] * 31 + ["north"]
    text = OLD_RUN + "\n" + json.dumps(sglang_record(texts)) + "\n"
    f = probe.serving_result(sglang_table(32, 32768, 94), text, "sglang.bench_serving")
    assert (f.tool, f.completed, f.empty_answers, f.retokenized_tokens) == ("sglang.bench_serving", 32, 0, 94)
    assert f.total_token_throughput == pytest.approx(534.81 * 2)
    assert gate.result(f, 0, True, 1.0, asked=(("--num-prompts", 32))) == []


def test_sglang_counts_empty_texts_successful_the_judge_names_the_client_and_the_share():
    texts = ["the river runs"] * 24 + [""] * 8
    f = probe.serving_result(sglang_table(32, 32768, 72), json.dumps(sglang_record(texts)), "sglang.bench_serving")
    found = gate.result(f, 0, True, 1.0, asked=("--num-prompts", 32))
    assert found[0] == ("sglang.bench_serving: 8 of 32 completed requests (25%) answered with no output (their "
                        "generated_texts are empty): the client counted them successful, but empty answers are not a "
                        "measurement")
    assert found[-1] == "and the benchmark exited 0"


def test_sglang_without_details_every_text_empty_shows_as_retokenized_zero():
    f = probe.serving_result(sglang_table(32, 32768, 0), None, "sglang.bench_serving")
    found = gate.result(f, 0, None, 1.0)
    assert found and found[0].startswith("sglang.bench_serving: 32 of 32 completed requests (100%) answered with no "
                                         "output (Total generated tokens (retokenized): 0 (the 32768 it counts")


def test_vllm_bench_serve_with_no_generated_token():
    table = "\n".join(["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
                       "{:<40} {:<10}".format("Successful requests:", 64),
                       "{:<40} {:<10}".format("Failed requests:", 0),
                       "{:<40} {:<10.2f}".format("Benchmark duration (s):", 12.5),
                       "{:<40} {:<10}".format("Total input tokens:", 65536),
                       "{:<40} {:<10}".format("Total generated tokens:", 0),
                       "{:<40} {:<10.2f}".format("Request throughput (req/s):", 5.12),
                       "{:<40} {:<10.2f}".format("Output token throughput (tok/s):", 0.0),
                       "{:<40} {:<10.2f}".format("Total Token throughput (tok/s):", 5242.88), "=" * 50])
    f = probe.serving_result(table, None, "vllm bench serve")
    assert f.failed == 0 and f.sent == 64
    found = gate.result(f, 0, None, 1.0)
    assert found[0].startswith("vllm bench serve: 64 of 64 completed requests (100%) answered with no output "
                               "(Total generated tokens: 0")


def test_vllm_bench_serve_counts_its_failed_row():
    table = "\n".join(["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
                       "{:<40} {:<10}".format("Successful requests:", 60), "{:<40} {:<10}".format("Failed requests:", 4),
                       "{:<40} {:<10.2f}".format("Benchmark duration (s):", 12.5),
                       "{:<40} {:<10}".format("Total generated tokens:", 7680),
                       "{:<40} {:<10.2f}".format("Output token throughput (tok/s):", 614.4), "=" * 50])
    f = probe.serving_result(table, None, "vllm bench serve")
    assert (f.completed, f.failed, f.sent) == (60, 4, 64)
    assert "4 of 64 requests failed" in gate.result(f, 0, None, 1.0)[0]


def test_a_run_with_answers_and_failures_is_not_called_empty():
    texts = ["words here"] * 30 + ["", ""]
    f = probe.serving_result(sglang_table(30, 30720, 60), json.dumps(sglang_record(texts, [""] * 30 + ["Bad Request"] * 2)),
                             "sglang.bench_serving")
    assert f.empty_answers == 0 and gate.empty_share(f) == ""


# --- the console and the file, mutated as they reach the suite ----------------------------------
@given(empty=st.integers(0, 32), crlf=st.booleans(), ansi=st.booleans(), bar=st.integers(0, 3), old_runs=st.integers(0, 2))
@SETTINGS
def test_the_empty_share_reads_the_same_whatever_the_console_noise(empty, crlf, ansi, bar, old_runs):
    texts = ["the river runs"] * (32 - empty) + [""] * empty
    record = sglang_record(texts)
    console = sglang_table(32, 32768, record["total_output_tokens_retokenized"])
    if ansi:  # a coloured banner
        console = console.replace(" Serving Benchmark Result ", "\x1b[1m Serving Benchmark Result \x1b[0m")
    console = "".join(f"{i * 10}%|{'#' * i}| {i}/32\r" for i in range(bar)) + console  # tqdm's redraws
    end = "\r\n" if crlf else "\n"
    console = console.replace("\n", end)
    file = end.join([OLD_RUN] * old_runs + [json.dumps(record)]) + end
    f = probe.serving_result(console, file, "sglang.bench_serving")
    assert f.completed == 32 and f.empty_answers == empty
    said = gate.empty_share(f)
    assert (f"{empty} of 32 completed requests" in said) if empty else said == ""
