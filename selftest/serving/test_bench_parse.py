"""Benchmark output parsers and judgments, on samples in the tools' own formats: ATOM's
benchmark_serving table ("{:<40} {:<10}" rows, atom/benchmarks/benchmark_serving.py) and
--save-result JSON; aiperf's profile_export_aiperf.json (top-level metrics in current releases,
under "records" in older ones) and its console's coverage error."""
import json

import pytest

from rackgate.gates import bench as gate
from rackgate.probes import bench as probe

pytestmark = pytest.mark.unit


def table(rows: list[tuple[str, object]]) -> str:
    out = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")]
    for label, v in rows:
        out.append("{:<40} {:<10.2f}".format(label, v) if isinstance(v, float) else "{:<40} {:<10}".format(label, v))
    out.append("{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"))
    out.append("{:<40} {:<10.2f}".format("Mean TTFT (ms):", 2080.0))
    return "\n".join(out + ["=" * 50])


GOOD = table([("Successful requests:", 256), ("Benchmark duration (s):", 481.48), ("Total input tokens:", 262144),
              ("Total generated tokens:", 262144), ("Request throughput (req/s):", 0.53),
              ("Output token throughput (tok/s):", 544.45), ("Total Token throughput (tok/s):", 1088.90),
              ("Concurrency:", 56.01)])
GOOD_JSON = json.dumps({"date": "20260924-100111", "backend": "openai", "model_id": "/models/Kimi-K3",
                        "num_prompts": 256, "duration": 481.48, "completed": 256, "total_input_tokens": 262144,
                        "total_output_tokens": 262144, "output_throughput": 544.45,
                        "total_token_throughput": 1088.90, "request_goodput:": None})
ALL_404 = ("/app/ATOM/atom/benchmarks/benchmark_serving.py:394: UserWarning: All requests failed. This is likely due "
           "to a misconfiguration on the benchmark arguments.\n  warnings.warn(\n" +
           table([("Successful requests:", 0), ("FAILED requests:", 256), ("Benchmark duration (s):", 0.41),
                  ("Total input tokens:", 0), ("Total generated tokens:", 0), ("Request throughput (req/s):", 0.0),
                  ("Output token throughput (tok/s):", 0.0), ("Total Token throughput (tok/s):", 0.0),
                  ("Concurrency:", 0.0)]))


def test_healthy_benchmark_serving_run():
    f = probe.serving_result(GOOD, GOOD_JSON)
    assert (f.sent, f.completed, f.failed, f.output_tokens) == (256, 256, 0, 262144)
    assert gate.result(f, 0, True, 1.0) == []


def test_the_404_run_that_completes_with_exit_0():
    f = probe.serving_result(ALL_404, None)
    assert f.completed == 0 and f.failed == 256 and f.duration_s == 0.41
    why = gate.result(f, 0, None, 1.0)
    text = " ".join(why)
    assert "All requests failed" in text and "Successful requests: 0" in text and "exited 0" in text
    assert "0.41s" in text


def test_failures_are_prompts_minus_completed_in_the_json():
    data = json.loads(GOOD_JSON) | {"completed": 250}
    f = probe.serving_result("", json.dumps(data))
    assert f.failed == 6 and any("6 of 256 requests failed" in w for w in gate.result(f, 0, True, 1.0))


def test_zero_token_requests_in_a_detailed_result():
    data = json.loads(GOOD_JSON) | {"num_prompts": 3, "completed": 3, "output_lens": [12, 0, 9], "errors": ["", "", ""]}
    f = probe.serving_result("", json.dumps(data))
    assert f.zero_token_requests == 1


def test_stale_result_file():
    assert any("not written by this run" in w for w in gate.result(probe.serving_result(GOOD, GOOD_JSON), 0, False, 1))


@pytest.mark.parametrize("bad", ["", "Traceback (most recent call last):\n  ...\nKeyError: 'x'"])
def test_no_table_no_file_is_a_parse_error(bad):
    with pytest.raises(probe.BenchParseError):
        probe.serving_result(bad, None)


def _metric(tag, avg, unit="requests"):
    return {"tag": tag, "unit": unit, "header": tag.replace("_", " ").title(), "avg": avg, "min": None, "max": None,
            "p50": None, "p99": None, "std": None, "count": 1}


def aiperf(nested: bool, ok: float, errors: float, extra: dict | None = None) -> str:
    metrics = {"request_count": _metric("request_count", ok), "error_request_count": _metric("error_request_count", errors),
               "benchmark_duration": _metric("benchmark_duration", 1790.2, "sec"),
               "total_output_tokens": _metric("total_output_tokens", 11236.0, "tokens"),
               "total_token_throughput": _metric("total_token_throughput", 2913.0, "tokens/sec"),
               "output_token_throughput": _metric("output_token_throughput", 6.12, "tokens/sec")}
    body = {"records": metrics} if nested else dict(metrics)
    body.update({"input_config": {"endpoint": {"model_names": ["moonshotai/Kimi-K3"]}}, "was_cancelled": False,
                 "error_summary": [], "start_time": "2026-10-01T10:00:00", "end_time": "2026-10-01T10:30:00"})
    body.update(extra or {})
    return json.dumps(body)


@pytest.mark.parametrize("nested", [False, True], ids=["top-level", "records"])
def test_aiperf_both_layouts(nested):
    f = probe.aiperf_result(aiperf(nested, 53, 0))
    assert (f.completed, f.failed, f.sent, f.total_token_throughput) == (53, 0, 53, 2913.0)
    assert gate.result(f, 0, True, 1.0) == []


def test_aiperf_errors_with_exit_0():
    data = aiperf(False, 89, 11, {"error_summary": [{"error_details": {"code": 499, "type": "RequestCancellationError",
                                                                      "message": "Request was cancelled"}, "count": 11}]})
    why = gate.result(probe.aiperf_result(data), 0, True, 1.0)
    assert any("11 of 100 requests failed" in w and "RequestCancellationError" in w for w in why)
    assert "and the benchmark exited 0" in why


def test_aiperf_metric_coverage_error():
    console = ("Phase profiling timed out, cancelling all credits.\n  Stats: sent=89, completed=3, cancelled=0, "
               "in_flight=86\nProfiling metric coverage below the required 95.0% for phase 'profiling':\n"
               "  TTFT=0.2%, inter-token latency=0.2% over the configured 1800.0s duration\n"
               "AIPerf System Exit Errors: ProfileMetricCoverageError\n")
    data = json.loads(aiperf(False, 3, 0))
    data["benchmark_duration"]["avg"] = 3.63
    f = probe.aiperf_result(json.dumps(data), console)
    why = " ".join(gate.result(f, 1, True, 1.0))
    assert "ProfileMetricCoverageError" in why and "3.63s" in why and "not the run" in why
    data["runtime_submission_invalid_reasons"] = ["insufficient_profile_metric_coverage"]
    assert "ProfileMetricCoverageError" in probe.aiperf_result(json.dumps(data)).fatal_errors


def test_aiperf_not_an_export():
    with pytest.raises(probe.BenchParseError):
        probe.aiperf_result(json.dumps({"foo": 1}))


def test_wire_names():
    c = probe.command("python3 -m atom.benchmarks.benchmark_serving --backend openai --model /models/Kimi-K3 "
                      "--tokenizer /models/Kimi-K3 --served-model-name moonshotai/Kimi-K3")
    assert (c.tool, c.wire_model) == ("benchmark_serving", "moonshotai/Kimi-K3")
    c = probe.command("python3 -m atom.benchmarks.benchmark_serving --model /models/Kimi-K3")
    assert c.wire_model == "/models/Kimi-K3"
    assert gate.preflight(c, ["moonshotai/Kimi-K3"], None)[0].endswith("serves ['moonshotai/Kimi-K3']")
    a = probe.command("aiperf profile --url http://n0:8000 --model moonshotai/Kimi-K3 --tokenizer /models/Kimi-K3")
    assert (a.tool, a.wire_model, a.tokenizer) == ("aiperf", "moonshotai/Kimi-K3", "/models/Kimi-K3")
    assert "not a readable directory" in gate.preflight(a, ["moonshotai/Kimi-K3"], False)[0]
    ok = probe.command("aiperf profile -m moonshotai/Kimi-K3 --tokenizer moonshotai/Kimi-K3")
    assert gate.preflight(ok, ["moonshotai/Kimi-K3"], None) == []


def test_per_gpu_divided_by_the_real_gpu_count():
    f = probe.serving_result(GOOD, json.dumps(json.loads(GOOD_JSON) | {"tput_per_gpu": 1088.90}))
    ours, bad = gate.aggregate(f, 16, 0.05)
    assert round(ours, 2) == 68.06 and "x16.0" in bad[0]
    ours, bad = gate.aggregate(probe.serving_result(GOOD, GOOD_JSON), 16, 0.05)
    assert bad == []


def test_a_table_cut_off_after_successful_requests_does_not_pass():
    cut = GOOD[:GOOD.index("Benchmark duration")]
    assert "Successful requests:" in cut
    with pytest.raises(probe.BenchParseError) as e:
        probe.serving_result(cut, None)
    assert "cut off" in str(e.value) and "Benchmark duration (s)" in str(e.value)
    assert probe.serving_result(cut, GOOD_JSON).completed == 256  # the result file still has every field


def test_aiperf_error_summary_entries_that_are_strings():
    data = aiperf(False, 89, 11, {"error_summary": ["RequestCancellationError: Request was cancelled",
                                                    {"error_details": "timeout", "count": 2}]})
    f = probe.aiperf_result(data)
    assert f.error_summary[0].startswith("RequestCancellationError") and "timeout" in f.error_summary[1]


OLD_250 = table([("Successful requests:", 250), ("Benchmark duration (s):", 470.02), ("Total input tokens:", 256000),
                 ("Total generated tokens:", 256000), ("Request throughput (req/s):", 0.53),
                 ("Output token throughput (tok/s):", 544.66), ("Total Token throughput (tok/s):", 1089.32)])
SERVING = ("python3 -m atom.benchmarks.benchmark_serving --backend openai --model /models/Kimi-K3 "
           "--served-model-name moonshotai/Kimi-K3 --dataset-name random --num-prompts {n} --max-concurrency 64")


def test_successes_short_of_the_prompts_asked_fail_with_no_failure_row():
    """An older benchmark_serving prints no FAILED row and no result file was asked: 250 of the
    256 prompts its command line asked for succeeded, exit 0 -- a partial run, both numbers named."""
    f = probe.serving_result(OLD_250, None)
    assert (f.completed, f.failed, f.sent) == (250, None, None)
    asked = probe.command(SERVING.format(n=256)).asked
    assert asked == ("--num-prompts", 256)
    why = gate.result(f, 0, None, 1.0, "", asked)
    assert why and "Successful requests: 250 of 256 asked (--num-prompts 256)" in why[0], why
    assert "and the benchmark exited 0" in why
    # the same table for the 250 asked is a whole run
    assert gate.result(f, 0, None, 1.0, "", probe.command(SERVING.format(n=250)).asked) == []


def test_a_result_file_s_num_prompts_counts_and_its_failures_are_said_once():
    data = json.loads(GOOD_JSON) | {"completed": 250}
    f = probe.serving_result("", json.dumps(data))
    why = gate.result(f, 0, True, 1.0, "", ("--num-prompts", 256))
    assert any("6 of 256 requests failed" in w for w in why) and not any("asked" in w for w in why), why


def test_aiperf_request_count_is_what_was_asked():
    f = probe.aiperf_result(aiperf(False, 90, 0))
    for flag in ("--request-count 100", "--num-requests=100"):
        asked = probe.command(f"aiperf profile -m moonshotai/Kimi-K3 --concurrency 8 {flag}").asked
        assert asked == (flag.split("=")[0].split()[0], 100)
        why = gate.result(f, 0, True, 1.0, "", asked)
        assert "Successful requests: 90 of 100 asked" in why[0], why
    assert probe.command("aiperf profile -m m --benchmark-duration 60").asked is None
