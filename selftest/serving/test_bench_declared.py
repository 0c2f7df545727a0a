"""BENCH-PREFLIGHT, BENCH-RESULT, BENCH-AGGREGATE as declared "server" checks: RESULT and AGGREGATE
name one probe (the session's one benchmark run), so their items read it once; each item asks for
`serving` first (its row needs SRV-MODELS: the run names the served model); the declared judges say
what the hand-written tests said, over gates/bench.py's judgments, with the benchmark's own output
(ATOM's benchmark_serving table, samples in test_bench_parse.py)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rackgate import registry
from rackgate.checks import declared as items
from rackgate.config import parse
from rackgate.errors import CouldNotObserve
from rackgate.gates import bench as gate
from rackgate.gates.declare import Check
from rackgate.probes import bench as probe
from rackgate.probes import bench_run
from rackgate.report.verdict import CheckFailed

from .test_bench_parse import ALL_404, GOOD, GOOD_JSON

pytestmark = pytest.mark.unit

RACK = """name = "r"
[bench]
command = "python -m atom.benchmarks.benchmark_serving --model {served_model} --num-prompts 256"
[[nodes]]
name = "node1"
transport = "local"
data_ip = "10.0.0.1"
tray = 1
"""


@pytest.fixture(scope="module")
def rack():
    return parse(RACK, "rack.toml")


def test_the_bench_rows_are_server_checks_over_one_run():
    got = registry.checks()
    assert {r: got[r].per for r in ("BENCH-PREFLIGHT", "BENCH-RESULT", "BENCH-AGGREGATE")} == dict.fromkeys(
        ("BENCH-PREFLIGHT", "BENCH-RESULT", "BENCH-AGGREGATE"), "server")
    assert got["BENCH-RESULT"].probe is got["BENCH-AGGREGATE"].probe is bench_run.session_run
    assert got["BENCH-PREFLIGHT"].probe is bench_run.preflight


class Recorder:
    def __init__(self) -> None:
        self.config = SimpleNamespace(stash={})  # the ordering's record: nothing failed yet
        self.asked: list[str] = []
        self.shown: list[str] = []
        self.recorded: list[tuple[str, Any, str]] = []

    def getfixturevalue(self, name: str) -> Any:
        self.asked.append(name)
        return Served() if name == "served" else None

    def attach(self, name: str, text: str, kind: str = "text") -> None:
        self.shown.append(name)

    def record(self, name: str, value: Any, where: str = "", unit: str = "", row: str = "") -> None:
        self.recorded.append((name, value, where))


class Served:
    url = "http://10.0.0.1:8000"


def test_result_and_aggregate_items_read_the_one_run_once_after_serving(rack):
    runs: list[str] = []

    def one_run(s: Any) -> str:
        runs.append(s.url)
        return "the run"

    def judged(got: str, rack: Any, where: str) -> list[str]:
        return []
    read_once: dict[str, Any] = {}
    for rid in ("BENCH-RESULT", "BENCH-AGGREGATE"):
        c = Check(rid, "server", probe=one_run, judge=judged, shows=lambda got, r: [])
        rec = Recorder()
        items.judge_server(c, "served", Served(), rack, read_once, rec, rec)
    assert runs == [Served.url]


def test_an_unreadable_run_is_every_item_s_could_not_observe_read_once(rack):
    runs: list[int] = []

    def broken(s: Any) -> str:
        runs.append(1)
        raise CouldNotObserve("bench.command: no benchmark client named")
    read_once: dict[str, Any] = {}
    for rid in ("BENCH-RESULT", "BENCH-AGGREGATE"):
        c = Check(rid, "server", probe=broken, judge=lambda got, r, w: [], shows=lambda got, r: [])
        rec = Recorder()
        with pytest.raises(CouldNotObserve, match="no benchmark client named"):
            items.judge_server(c, "served", Served(), rack, read_once, rec, rec)
    assert runs == [1]


def _run(rack, stdout: str, result: str | None, rc: int = 0) -> bench_run.BenchRun:
    line = rack.bench.command.replace("{served_model}", "moonshotai/Kimi-K3")
    cmd = probe.command(line)
    facts = probe.serving_result(stdout + "\n", result)
    return bench_run.BenchRun(cmd, line, rc, stdout, "", f"$ {line}\n{stdout}", result, True, "", 16, facts)


def test_the_declared_judges_say_what_the_run_measured(rack):
    good = _run(rack, GOOD, GOOD_JSON)
    assert gate.result_item(good, rack, Served.url) == []
    assert gate.aggregate_item(good, rack, Served.url) == []
    assert [(f.name, f.value, f.where) for f in gate.aggregate_facts(good, "server")][0] == \
        ("bench.tok_s_per_gpu", round(1088.90 / 16, 2), "rack")
    assert [s.name for s in gate.result_shown(good, rack)] == ["benchmark output", "result file"]
    bad = _run(rack, ALL_404, None)
    [finding] = gate.result_item(bad, rack, Served.url)
    assert finding.startswith("benchmark_serving: completed 0 of 256") and "and the benchmark exited 0" in finding
    with pytest.raises(CouldNotObserve, match="no throughput to judge"):
        gate.aggregate_item(bad, rack, Served.url)
    assert gate.aggregate_facts(bad, "server") == [] and gate.aggregate_shown(bad, rack) == []


def test_a_failed_result_item_is_the_row_s_failed_at_the_server(rack):
    bad = _run(rack, ALL_404, None)
    c = Check("BENCH-RESULT", "server", probe=lambda s: bad, judge=gate.result_item, shows=gate.result_shown)
    rec = Recorder()
    with pytest.raises(CheckFailed) as e:
        items.judge_server(c, "served", Served(), rack, {}, rec, rec)
    assert e.value.row_id == "BENCH-RESULT" and e.value.where == Served.url
    assert rec.shown == ["benchmark output"]


def test_no_bench_command_does_not_apply(rack):
    assert gate.no_bench(rack) == ""
    bare = rack.model_copy(update={"bench": rack.bench.model_copy(update={"command": ""})})
    assert "no [bench] command" in gate.no_bench(bare)
