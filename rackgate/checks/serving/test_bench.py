"""BENCH-PREFLIGHT, BENCH-RESULT, BENCH-AGGREGATE: the rack file's benchmark command, checked before it
runs, run once on the head node (inside the container), and its own output judged. Exit code 0 is
never taken as success."""
from urllib.parse import urlparse

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import dead_ranks
from rackgate.gates import bench as gate
from rackgate.probes import bench as probe
from rackgate.probes import bench_run as bench_run_probe
from rackgate.report.verdict import check


def _command(rack, server) -> str:
    """The rack file's benchmark command aimed at the server under test (the attached one too)."""
    if not rack.bench.command:
        pytest.skip("the rack file has no [bench] command: no benchmark to check")
    url = urlparse(server.url)
    return bench_run_probe.fill(rack.bench.command, {"head_ip": url.hostname, "port": url.port or 80,
                                                     "served_model": server.client.model,
                                                     "result_path": rack.bench.result_path})


def _parsed(rack, server) -> probe.BenchCommand:
    try:
        return probe.command(_command(rack, server))
    except probe.BenchParseError as e:
        raise CouldNotObserve(f"bench.command: {e}") from None


@pytest.mark.row("BENCH-PREFLIGHT")
def test_wire_name_is_served(server, rack, evidence):
    cmd = _parsed(rack, server)
    served = server.client.model_ids()
    head = server.node_logs()[rack.head.name].host
    tok_dir = None
    if cmd.tokenizer and cmd.tokenizer.startswith(("/", ".", "~")):
        tok_dir = bench_run_probe.readable_dir(head, cmd.tokenizer)
    evidence.attach("benchmark command", _command(rack, server))
    findings = gate.preflight(cmd, served, tok_dir)
    check(not findings, "BENCH-PREFLIGHT", rack.head.name, f"{cmd.tool}: " + "; ".join(findings))


@pytest.fixture(scope="module")
def bench_run(serving, rack, pytestconfig):
    """Run the benchmark once: (command, result, result text, fresh)."""
    server = serving
    dead = dead_ranks(pytestconfig)
    if dead is not None:  # its requests would hang on the dead rank until the bench timeout
        raise dead
    cmd = _command(rack, server)
    head = server.node_logs()[rack.head.name].host
    res, text, fresh = bench_run_probe.run(head, cmd, rack.bench.result_path, rack.serving.bench.timeout_s)
    return cmd, res, text, fresh


def _facts(bench_run) -> probe.BenchFacts:
    cmd, res, text, _ = bench_run
    tool = probe.command(cmd).tool
    try:
        if tool == "aiperf":
            if text is None:
                raise probe.BenchParseError("no profile_export_aiperf.json was written")
            return probe.aiperf_result(text, res.stdout + res.stderr)
        return probe.serving_result(res.stdout + "\n" + res.stderr, text)
    except probe.BenchParseError as e:
        raise CouldNotObserve(f"{tool} output: {e} (exit {res.rc}; last output: "
                              f"{(res.stdout + res.stderr).strip()[-200:]!r})") from None


@pytest.mark.row("BENCH-RESULT")
def test_benchmark_measured_something(server, bench_run, rack, evidence):
    cmd, res, text, fresh = bench_run
    evidence.attach("benchmark output", res.evidence())
    if text is not None:
        evidence.attach("result file", text[:20000], "json")
    elif rack.bench.result_path and probe.command(cmd).tool == "aiperf":
        # aiperf writes no export at all when every request failed: that run measured nothing
        last = (res.stdout + res.stderr).strip().splitlines()[-3:]
        why = gate.http_failures(res.stdout + res.stderr)
        check(False, "BENCH-RESULT", rack.head.name, f"aiperf exited {res.rc} and wrote no profile_export_aiperf.json "
              f"under {rack.bench.result_path}" + (f"; failed requests: {'; '.join(why)}" if why else "") +
              f"; its last lines: {' | '.join(x.strip() for x in last)[:300]}")
    f = _facts(bench_run)
    asked = probe.command(cmd).asked
    findings = gate.result(f, res.rc, fresh if rack.bench.result_path else None, rack.serving.bench.min_duration_s,
                           res.stdout + "\n" + res.stderr, asked)
    of = f.sent if f.sent is not None else (f"{asked[1]} asked" if asked else None)
    check(not findings, "BENCH-RESULT", rack.head.name,
          f"{f.tool}: completed {f.completed} of {of}, duration {f.duration_s}s: " + "; ".join(findings))


@pytest.mark.row("BENCH-AGGREGATE")
def test_per_gpu_throughput(server, bench_run, rack, facts, evidence):
    f = _facts(bench_run)
    ours, findings = gate.aggregate(f, rack.gpu_count, rack.serving.bench.per_gpu_tolerance)
    if ours is None:
        raise CouldNotObserve(f"{f.tool}: {findings[0]}")
    facts.record("bench.tok_s_per_gpu", round(ours, 2), where="rack", unit="tok/s/GPU", row="BENCH-AGGREGATE")
    for name, v in (("bench.ttft_ms", f.mean_ttft_ms), ("bench.tpot_ms", f.mean_tpot_ms)):
        if v is not None:
            facts.record(name, round(v, 3), where="rack", unit="ms", row="BENCH-AGGREGATE")
    evidence.attach("per-GPU throughput", f"total {f.total_token_throughput:.2f} tok/s / {rack.gpu_count} GPUs = "
                    f"{ours:.2f} tok/s/GPU; reported per-GPU fields: {f.per_gpu or 'none'}")
    check(not findings, "BENCH-AGGREGATE", rack.head.name, "; ".join(findings))
