"""Benchmark outputs -> facts: ATOM's benchmark_serving (stdout table, --save-result JSON) and
aiperf (profile_export_aiperf.json, console). Pure parsers; the formats are the tools' own:

- benchmark_serving (atom/benchmarks/benchmark_serving.py): the table printed with
  "{:<40} {:<10}".format(label, value) under "=== Serving Benchmark Result ===", an optional
  "FAILED requests:" line, `warnings.warn("All requests failed. ...")` when nothing completed; the
  JSON has num_prompts and completed (no failure count: failed = num_prompts - completed),
  duration, total_input_tokens, total_output_tokens, *_throughput, and output_lens/errors when
  --save-detailed.
- SGLang's bench_serving (sglang/bench_serving.py): the same banner and "{:<40} {:<10}" rows
  (its own labels: "Backend:", "Max request concurrency:" may read "not set", "Total generated
  tokens (retokenized):"), no failure row; its --output-file is JSON lines it appends to (one
  record per run: the last line is this run's), with completed, total_output_tokens,
  total_output_tokens_retokenized and, with --output-details, output_lens, generated_texts and
  errors. A request it counts successful may carry an empty text: its output_len is the usage's
  completion_tokens, or the requested length when the server sent no usage, while the
  retokenized count is the text's own.
- `vllm bench serve` (vllm/benchmarks/serve.py): benchmark_serving's table and --save-result JSON.
- aiperf: each metric is an object {"tag", "unit", "header", "avg", ...}, at the top level in
  current releases and under "records" in older ones; request_count is the successful
  requests, error_request_count the failed ones; error_summary, was_cancelled; a run that lost
  metric coverage ends with "AIPerf System Exit Errors: ProfileMetricCoverageError" and its
  benchmark_duration is the span of the few completed requests, not the run.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import UnrecognisedOutput
from ..lines import split_lines
from . import argv as cmdline

ALL_FAILED = "All requests failed"
# A printed table without these was cut off (the run died while printing, or the output was
# truncated): not a result. Used when there is no --save-result JSON to read them from.
TABLE_REQUIRED = ("Successful requests", "Benchmark duration (s)", "Total generated tokens",
                  "Output token throughput (tok/s)")
COVERAGE_ERROR = "ProfileMetricCoverageError"
_ROW = re.compile(r"^(?P<label>[A-Za-z][^:]*?:)\s+(?P<value>-?[\d.]+|inf|nan)\s*$")


class BenchParseError(UnrecognisedOutput, ValueError):
    """The output is not the format this parser knows (one line saying what is missing)."""


@dataclass
class BenchFacts:
    tool: str                       # benchmark_serving | aiperf
    sent: int | None = None         # requests the run meant to send
    completed: int | None = None
    failed: int | None = None
    duration_s: float | None = None
    output_tokens: int | None = None
    total_token_throughput: float | None = None
    output_throughput: float | None = None
    mean_ttft_ms: float | None = None        # time to first token
    mean_tpot_ms: float | None = None        # time per output token (after the first)
    zero_token_requests: int | None = None   # completed requests that generated nothing
    empty_answers: int | None = None         # completed requests whose text is empty (generated_texts)
    retokenized_tokens: int | None = None    # SGLang: the output texts' tokens counted again
    per_gpu: dict[str, float] = field(default_factory=dict)   # per-GPU figures the result reports
    warnings: list[str] = field(default_factory=list)
    fatal_errors: list[str] = field(default_factory=list)
    error_summary: list[str] = field(default_factory=list)


# --- benchmark_serving ---------------------------------------------------------------------
def serving_table(stdout: str) -> dict[str, float]:
    """The printed result table: {label without colon: value}."""
    out: dict[str, float] = {}
    in_table = False
    for line in split_lines(stdout):
        if "Serving Benchmark Result" in line:
            in_table = True
            continue
        if not in_table:
            continue
        m = _ROW.match(line.rstrip())
        if m:
            try:
                out[m["label"][:-1].strip()] = float(m["value"])
            except ValueError:
                raise BenchParseError(f"benchmark_serving table row {line.strip()[:80]!r}: not a number") from None
    return out


def last_record(text: str) -> str:
    """A result file's record of this run: the file itself, or the last line of JSON lines a
    client appends to (SGLang's --output-file)."""
    lines = [x for x in split_lines(text) if x.strip()]
    if len(lines) > 1 and lines[-1].lstrip().startswith("{") and lines[0].lstrip().startswith("{"):
        try:
            json.loads(lines[-1])
            return lines[-1]
        except json.JSONDecodeError:
            return text
    return text


def serving_result(stdout: str, result_json: str | None, tool: str = "benchmark_serving") -> BenchFacts:
    f = BenchFacts(tool)
    table = serving_table(stdout)
    for line in split_lines(stdout):
        if ALL_FAILED in line:
            f.warnings.append(line.strip())
    data = {}
    if result_json is not None:
        try:
            data = json.loads(last_record(result_json))
        except json.JSONDecodeError as e:
            raise BenchParseError(f"benchmark_serving result file is not JSON ({e.msg} at line {e.lineno})") from None
        if not isinstance(data, dict):
            raise BenchParseError("benchmark_serving result file is not a JSON object")
    if not table and not data:
        raise BenchParseError("no 'Serving Benchmark Result' table in the output and no result file")
    if not data:
        missing = [k for k in TABLE_REQUIRED if k not in table]
        if missing and not f.warnings:
            raise BenchParseError(f"the 'Serving Benchmark Result' table is cut off: no {', '.join(missing)} "
                                  f"(last row read: {list(table)[-1] if table else 'none'})")
    f.completed = _int(data.get("completed"), table.get("Successful requests"))
    f.sent = _int(data.get("num_prompts"))
    # ATOM's "FAILED requests:" row; vLLM's (`vllm bench serve`) "Failed requests:" and its JSON's "failed"
    failed_row = table.get("FAILED requests", table.get("Failed requests"))
    if failed_row is not None or _int(data.get("failed")) is not None:
        f.failed = _int(data.get("failed"), failed_row)
    elif f.sent is not None and f.completed is not None:
        f.failed = f.sent - f.completed
    if f.sent is None and f.completed is not None and f.failed is not None:
        f.sent = f.completed + f.failed
    f.duration_s = _float(data.get("duration"), table.get("Benchmark duration (s)"))
    f.output_tokens = _int(data.get("total_output_tokens"), table.get("Total generated tokens"))
    f.retokenized_tokens = _int(data.get("total_output_tokens_retokenized"),
                                table.get("Total generated tokens (retokenized)"))
    # ATOM's and vLLM's "Total Token throughput", SGLang's "Total token throughput" (older: "Total
    # throughput"); SGLang's JSON has no total: its input + output throughput
    sglang_total = (_float(data.get("input_throughput")) or 0.0) + (_float(data.get("output_throughput")) or 0.0) \
        if "total_output_tokens_retokenized" in data else None
    f.total_token_throughput = _float(data.get("total_token_throughput"), table.get("Total Token throughput (tok/s)"),
                                      table.get("Total token throughput (tok/s)"), table.get("Total throughput (tok/s)"),
                                      sglang_total)
    f.output_throughput = _float(data.get("output_throughput"), table.get("Output token throughput (tok/s)"))
    f.mean_ttft_ms = _float(data.get("mean_ttft_ms"), table.get("Mean TTFT (ms)"))
    f.mean_tpot_ms = _float(data.get("mean_tpot_ms"), table.get("Mean TPOT (ms)"))
    lens = data.get("output_lens")
    errors = data.get("errors")
    if isinstance(lens, list):  # --save-detailed: a failed request has an error and length 0
        errs = errors if isinstance(errors, list) and len(errors) == len(lens) else [""] * len(lens)
        f.zero_token_requests = sum(1 for n, e in zip(lens, errs) if not e and not n)
    texts = data.get("generated_texts")
    if isinstance(texts, list):  # a request that succeeded (no error) with no text: an empty answer
        errs = errors if isinstance(errors, list) and len(errors) == len(texts) else [""] * len(texts)
        f.empty_answers = sum(1 for t, e in zip(texts, errs) if not e and isinstance(t, str) and not t.strip())
    if isinstance(errors, list):  # --save-detailed: each failed request's error, e.g. the HTTP reason
        from collections import Counter
        f.error_summary = [f"{n} x {e.strip()[:120]}" for e, n in Counter(str(e) for e in errors if e).most_common(3)]
    f.per_gpu = {k: float(v) for k, v in data.items() if "per_gpu" in k and isinstance(v, (int, float))}
    return f


# --- aiperf --------------------------------------------------------------------------------
def _metric(data: dict[str, Any], tag: str) -> float | None:
    for where in (data, data.get("records") or {}):
        m = where.get(tag) if isinstance(where, dict) else None
        v = m.get("avg") if isinstance(m, dict) else m
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                f = float(v)
            except OverflowError:
                f = math.inf
            if not math.isfinite(f) or abs(f) > 1e15:
                raise BenchParseError(f"aiperf metric {tag} = {str(v)[:40]}: not a usable number")
            return f
    return None


def aiperf_result(export_json: str, console: str = "") -> BenchFacts:
    try:
        data = json.loads(export_json)
    except json.JSONDecodeError as e:
        raise BenchParseError(f"profile_export_aiperf.json is not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict) or _metric(data, "request_count") is None and _metric(data, "error_request_count") is None:
        raise BenchParseError("profile_export_aiperf.json has neither request_count nor error_request_count")
    f = BenchFacts("aiperf")
    ok, bad = _metric(data, "request_count"), _metric(data, "error_request_count")
    f.completed = int(ok) if ok is not None else 0
    f.failed = int(bad) if bad is not None else 0
    f.sent = f.completed + f.failed
    f.duration_s = _metric(data, "benchmark_duration")
    out_tokens = _metric(data, "total_output_tokens")
    if out_tokens is None:
        out_tokens = _metric(data, "total_osl")
    f.output_tokens = int(out_tokens) if out_tokens is not None else None
    f.total_token_throughput = _metric(data, "total_token_throughput")
    f.output_throughput = _metric(data, "output_token_throughput")
    f.mean_ttft_ms = _metric(data, "time_to_first_token")
    f.mean_tpot_ms = _metric(data, "inter_token_latency")
    osl_min = (data.get("output_sequence_length") or (data.get("records") or {}).get("output_sequence_length") or {})
    if isinstance(osl_min, dict) and osl_min.get("min") == 0:
        f.zero_token_requests = 1  # at least one; the export keeps no per-request count here
    summary = data.get("error_summary") or []
    for entry in summary if isinstance(summary, list) else [summary]:
        if not isinstance(entry, dict):  # some releases write the message itself
            f.error_summary.append(str(entry)[:160])
            continue
        det = entry.get("error_details")
        det = det if isinstance(det, dict) else {"message": det} if det else {}
        f.error_summary.append(f"{entry.get('count', '?')} x {det.get('type', '?')} {det.get('code', '')}: "
                               f"{str(det.get('message', ''))[:120]}")
    invalid = data.get("runtime_submission_invalid_reasons") or []
    invalid = invalid if isinstance(invalid, list) else [invalid]
    if "insufficient_profile_metric_coverage" in invalid or COVERAGE_ERROR in console:
        f.fatal_errors.append(COVERAGE_ERROR)
    if data.get("was_cancelled"):
        f.fatal_errors.append("was_cancelled")
    f.per_gpu = {k: v for k, v in ((k, _metric(data, k)) for k in data if "per_gpu" in k) if v is not None}
    return f


# --- the command ---------------------------------------------------------------------------
# The flag that says how many requests a client is asked to send: benchmark_serving's
# --num-prompts (atom/benchmarks/benchmark_serving.py, vLLM's alike); aiperf's --request-count and
# its alias --num-requests (aiperf's CLI config, "Stop after this many requests sent").
ASKED_FLAGS = {"benchmark_serving": ("num-prompts",), "aiperf": ("request-count", "num-requests"),
               "sglang.bench_serving": ("num-prompts",), "vllm bench serve": ("num-prompts",)}
# The clients whose output is benchmark_serving's table and result file (their own labels added).
SERVING_TABLE_CLIENTS = ("benchmark_serving", "sglang.bench_serving", "vllm bench serve")
_VLLM_BENCH = re.compile(r"(?:^|\s)(?:\S*/)?vllm\s+bench\s+serve(?:\s|$)")


@dataclass(frozen=True)
class BenchCommand:
    tool: str            # benchmark_serving | aiperf | unknown
    wire_model: str      # the model name the requests will carry
    tokenizer: str | None
    flags: dict[str, str | None]

    @property
    def asked(self) -> tuple[str, int] | None:
        """(the flag, the number of requests) the command asks the client to send; None when it
        does not say (the client's default, or a run bounded by time)."""
        for name in ASKED_FLAGS.get(self.tool, ()):
            v = self.flags.get(name)
            if v is not None and v.strip().isdecimal():
                return f"--{name}", int(v)
        return None


def command(cmd: str) -> BenchCommand:
    """What a benchmark command will put on the wire: benchmark_serving sends
    --served-model-name (else --model, a path); aiperf sends --model (-m)."""
    try:
        words = cmdline.split(cmd)
    except ValueError as e:
        raise BenchParseError(f"bench.command does not parse as a shell command: {e}") from None
    flags = cmdline.flags(words)
    text = " ".join(words)
    if "sglang.bench_serving" in text:  # SGLang sends --served-model-name, else --model
        wire = flags.get("served-model-name") or flags.get("model") or ""
        return BenchCommand("sglang.bench_serving", wire, flags.get("tokenizer"), flags)
    if _VLLM_BENCH.search(text):
        wire = flags.get("served-model-name") or flags.get("model") or ""
        return BenchCommand("vllm bench serve", wire, flags.get("tokenizer"), flags)
    if "benchmark_serving" in text:
        wire = flags.get("served-model-name") or flags.get("model") or ""
        return BenchCommand("benchmark_serving", wire, flags.get("tokenizer"), flags)
    if "aiperf" in text:
        return BenchCommand("aiperf", flags.get("model") or flags.get("m") or "", flags.get("tokenizer"), flags)
    return BenchCommand("unknown", flags.get("served-model-name") or flags.get("model") or "", flags.get("tokenizer"),
                        flags)


def _finite(v: float) -> bool:
    try:
        f = float(v)
    except OverflowError:
        raise BenchParseError(f"a count or figure is {str(v)[:30]}... (too large to be one)") from None
    if f != f or f in (float("inf"), float("-inf")):
        raise BenchParseError(f"a count or figure is {v} (not a finite number)")
    return True


def _int(*vals: object) -> int | None:
    for v in vals:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v):
            return int(v)
    return None


def _float(*vals: object) -> float | None:
    for v in vals:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v):
            return float(v)
    return None
