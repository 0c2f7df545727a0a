"""BENCH-PREFLIGHT, BENCH-RESULT, BENCH-AGGREGATE: did the benchmark measure the model, and are
its per-GPU numbers per GPU. A benchmark's exit code 0 is never taken as success. Declared as
"server" checks (rackgate/gates/declare.py): PREFLIGHT over the command as it will run
(probes/bench_run.py `preflight`), RESULT and AGGREGATE over the session's one run (`session_run`,
read once for both); `preflight`, `result` and `aggregate` below are their judgments."""
from __future__ import annotations

import re
from collections import Counter

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import bench_run
from ..probes.bench import COVERAGE_ERROR, BenchCommand, BenchFacts
from ..probes.bench_run import BenchRun, Preflight
from .declare import Check, Fact, Shown, declare

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def preflight(cmd: BenchCommand, served: list[str], tokenizer_is_dir: bool | None) -> list[str]:
    """tokenizer_is_dir: whether the tokenizer path is a readable directory where the benchmark
    runs (None when the tokenizer is not a path)."""
    out = []
    wire = cmd.wire_model
    if not wire:
        out.append(f"the {cmd.tool} command names no model: the requests will carry none")
    elif wire.rstrip("/") not in {s.rstrip("/") for s in served}:
        path = " (a filesystem path: add --served-model-name)" if wire.startswith("/") and cmd.tool == \
            "benchmark_serving" else " (a filesystem path)" if wire.startswith("/") else ""
        out.append(f"the requests will name {wire!r}{path}; /v1/models serves {served}")
    if cmd.tool == "aiperf" and cmd.tokenizer is not None:
        tok = cmd.tokenizer
        if tok.startswith(("/", ".", "~")):
            if not tokenizer_is_dir:
                out.append(f"aiperf --tokenizer {tok} is not a readable directory where the benchmark runs: "
                           "use the hub repo id (moonshotai/Kimi-K3)")
        elif not HUB_ID.match(tok):
            out.append(f"aiperf --tokenizer {tok!r} is neither a hub repo id nor a path")
    return out


HTTP_FAILURE = re.compile(r"\b(?:HTTP(?:/\d(?:\.\d)?)?|[Ss]tatus(?:[ _][Cc]ode)?)[\s:=]*([45]\d\d)\b[ :,-]*([^\n\"'}]{0,100})")


def http_failures(text: str, limit: int = 3) -> list[str]:
    """The HTTP statuses and reasons of failed requests as the benchmark printed them, most
    frequent first ('32 x HTTP 422: Unprocessable Entity ...'); empty when it printed none."""
    seen = Counter((m.group(1), m.group(2).strip()[:100]) for m in HTTP_FAILURE.finditer(text or ""))
    return [f"{n} x HTTP {code}" + (f": {why}" if why else "") for (code, why), n in seen.most_common(limit)]


def result(f: BenchFacts, rc: int, fresh: bool | None, min_duration_s: float, output: str = "",
           asked: tuple[str, int] | None = None) -> list[str]:
    """Why the run measured nothing (empty: it measured something). fresh: the result file was
    written by this run (None: no result file was expected). output: the benchmark's console
    output, read for the HTTP status and reason of failed requests when the result has none.
    asked: (flag, count) the command line asked for (BenchCommand.asked): the successes are
    counted against it -- a client that prints no failure row (older benchmark_serving) still
    sent the requests it was asked to."""
    out = []
    short = shortfall(f, asked)
    if short:
        out.append(short)
    reasons = f.error_summary[:3] or http_failures(output)
    if fresh is False:
        out.append("the result file was not written by this run (it is older than the run's start)")
    for w in f.warnings:
        out.append(f"benchmark warned: {w[:160]}")
    if f.completed is not None and f.completed == 0:
        out.append(f"Successful requests: 0 of {f.sent if f.sent is not None else '?'}"
                   + (f" ({'; '.join(reasons)})" if reasons and not f.failed else ""))
    if f.failed:
        out.append(f"{f.failed} of {f.sent} requests failed"
                   + (f" ({'; '.join(reasons)})" if reasons else " (the benchmark printed no HTTP status for them)"))
    if f.sent is not None and f.completed is not None and f.completed + (f.failed or 0) != f.sent:
        out.append(f"completed {f.completed} + failed {f.failed or 0} != requests sent {f.sent}")
    empty = empty_share(f)
    if empty:
        out.append(empty)
    if COVERAGE_ERROR in f.fatal_errors:
        dur = f" (its Benchmark Duration {f.duration_s:.2f}s is the span of the few completed requests, not the " \
              "run)" if f.duration_s is not None else ""
        out.append(f"{COVERAGE_ERROR}: the run was discarded{dur}")
    elif f.fatal_errors:
        out.append(f"fatal: {', '.join(f.fatal_errors)}")
    if f.duration_s is not None and f.duration_s < min_duration_s and COVERAGE_ERROR not in f.fatal_errors:
        out.append(f"finished in {f.duration_s:.2f}s (< {min_duration_s:g}s, serving.bench.min_duration_s)")
    if out and rc == 0:
        out.append("and the benchmark exited 0")
    elif rc != 0 and not out:
        out.append(f"the benchmark exited {rc}")
    return out


def empty_share(f: BenchFacts) -> str:
    """Completed requests whose answers are empty, named with the client and their share: a run of
    empty answers is not a measurement, whatever its throughput says. Counted from the client's own
    per-request record when it has one (generated_texts, output_lens), else from its totals
    (no token generated, or none left when the texts are tokenized again)."""
    if not f.completed:
        return ""
    how, n = "", 0
    if f.empty_answers:
        n, how = f.empty_answers, "their generated_texts are empty"
    elif f.output_tokens == 0:
        n, how = f.completed, "Total generated tokens: 0, every metric is 0.00"
    elif f.retokenized_tokens == 0:
        n, how = f.completed, (f"Total generated tokens (retokenized): 0 (the {f.output_tokens} it counts are the "
                               "lengths asked for, not tokens received)")
    elif f.zero_token_requests and f.tool == "aiperf":  # its export keeps only the minimum
        return (f"aiperf: at least one of {f.completed} completed requests answered with no output "
                "(output_sequence_length min 0): empty answers are not a measurement")
    elif f.zero_token_requests:
        n, how = f.zero_token_requests, "their output_lens are 0"
    if not n:
        return ""
    return (f"{f.tool}: {n} of {f.completed} completed requests ({n / f.completed:.0%}) answered with no output "
            f"({how}): the client counted them successful, but empty answers are not a measurement")


def shortfall(f: BenchFacts, asked: tuple[str, int] | None) -> str:
    """Fewer successes than requests asked for, with no failure count that accounts for the rest
    (a failure count that does is said by result() itself)."""
    if f.completed is None or not f.completed:
        return ""
    if asked is not None:
        how, want = f"{asked[0]} {asked[1]}", asked[1]
    elif f.sent is not None and f.failed is None:
        how, want = "num_prompts in its result file", f.sent
    else:
        return ""
    if f.completed >= want or f.completed + (f.failed or 0) >= want:
        return ""
    rows = f"{f.failed} failed" if f.failed else "no failure row accounts for the rest"
    return (f"Successful requests: {f.completed} of {want} asked ({how}): {want - f.completed - (f.failed or 0)} "
            f"request(s) neither succeeded nor were counted failed ({rows})")


def aggregate(f: BenchFacts, gpu_count: int, tolerance: float) -> tuple[float | None, list[str]]:
    """Our per-GPU total throughput (total / real GPU count) and any reported per-GPU figure
    that disagrees with it."""
    if f.total_token_throughput is None:
        return None, ["the result has no total token throughput to divide"]
    if not f.completed or not f.total_token_throughput:
        return None, [f"the run completed {f.completed if f.completed is not None else 'no'} requests "
                      f"(total throughput {f.total_token_throughput:g} tok/s): no throughput to judge "
                      "(see BENCH-RESULT)"]
    ours = f.total_token_throughput / gpu_count
    bad = []
    for k, v in f.per_gpu.items():
        base = f.output_throughput if k.startswith("output") else f.total_token_throughput
        want = (base or 0) / gpu_count
        if want and abs(v - want) / want > tolerance:
            bad.append(f"{k}={v:.2f} but {('output' if k.startswith('output') else 'total')} throughput "
                       f"{base:.2f} / {gpu_count} GPUs = {want:.2f} (x{v / want:.1f})")
    return ours, bad


# --- the declarations ("server" scope: one item per endpoint) ------------------------------------
def no_bench(rack: Rack) -> str:
    return "" if rack.bench.command else "the rack file has no [bench] command: no benchmark to check"


def preflight_item(p: Preflight, rack: Rack, where: str) -> list[str]:
    findings = preflight(p.cmd, list(p.served), p.tokenizer_is_dir)
    return [f"{p.cmd.tool}: " + "; ".join(findings)] if findings else []


def preflight_shown(p: Preflight, rack: Rack) -> list[Shown]:
    return [Shown("benchmark command", p.line)]


def _facts(b: BenchRun) -> BenchFacts:
    if b.facts is None:
        raise CouldNotObserve(b.unread)
    return b.facts


def result_item(b: BenchRun, rack: Rack, where: str) -> list[str]:
    out = b.stdout + b.stderr
    if b.result is None and b.result_path and b.cmd.tool == "aiperf":
        # aiperf writes no export at all when every request failed: that run measured nothing
        last = out.strip().splitlines()[-3:]
        why = http_failures(out)
        return [f"aiperf exited {b.rc} and wrote no profile_export_aiperf.json under {b.result_path}"
                + (f"; failed requests: {'; '.join(why)}" if why else "")
                + f"; its last lines: {' | '.join(x.strip() for x in last)[:300]}"]
    f = _facts(b)
    asked = b.cmd.asked
    findings = result(f, b.rc, b.fresh if b.result_path else None, rack.serving.bench.min_duration_s,
                      b.stdout + "\n" + b.stderr, asked)
    of = f.sent if f.sent is not None else (f"{asked[1]} asked" if asked else None)
    return [f"{f.tool}: completed {f.completed} of {of}, duration {f.duration_s}s: " + "; ".join(findings)] \
        if findings else []


def result_shown(b: BenchRun, rack: Rack) -> list[Shown]:
    out = [Shown("benchmark output", b.output)]
    if b.result is not None:
        out.append(Shown("result file", b.result[:20000], "json"))
    return out


def aggregate_item(b: BenchRun, rack: Rack, where: str) -> list[str]:
    f = _facts(b)
    ours, findings = aggregate(f, b.gpu_count, rack.serving.bench.per_gpu_tolerance)
    if ours is None:
        raise CouldNotObserve(f"{f.tool}: {findings[0]}")
    return findings


def _per_gpu(b: BenchRun) -> float | None:
    """Our per-GPU total throughput (None: nothing to divide)."""
    if b.facts is None:
        return None
    return aggregate(b.facts, b.gpu_count, 0.0)[0]


def aggregate_shown(b: BenchRun, rack: Rack) -> list[Shown]:
    ours = _per_gpu(b)
    if ours is None or b.facts is None:
        return []
    f = b.facts
    return [Shown("per-GPU throughput", f"total {f.total_token_throughput:.2f} tok/s / {b.gpu_count} GPUs = "
                  f"{ours:.2f} tok/s/GPU; reported per-GPU fields: {f.per_gpu or 'none'}")]


def aggregate_facts(b: BenchRun, where: str) -> list[Fact]:
    ours = _per_gpu(b)
    if ours is None or b.facts is None:
        return []
    out = [Fact("bench.tok_s_per_gpu", round(ours, 2), "tok/s/GPU", "rack")]
    for name, v in (("bench.ttft_ms", b.facts.mean_ttft_ms), ("bench.tpot_ms", b.facts.mean_tpot_ms)):
        if v is not None:
            out.append(Fact(name, round(v, 3), "ms", "rack"))
    return out


declare(Check("BENCH-PREFLIGHT", "server", probe=bench_run.preflight, judge=preflight_item, shows=preflight_shown,
              applies=no_bench),
        Check("BENCH-RESULT", "server", probe=bench_run.session_run, judge=result_item, shows=result_shown,
              applies=no_bench),
        Check("BENCH-AGGREGATE", "server", probe=bench_run.session_run, judge=aggregate_item, shows=aggregate_shown,
              facts=aggregate_facts, applies=no_bench))
