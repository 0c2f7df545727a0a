"""SRV-KV and SRV-TRANSLATION as declared checks (issue 35): judged on what the ranks logged while
booting, read through the server logs (not the booted server), also when the boot failed -- each
through the generic item (rackgate/checks/declared.py `judge`), with no server and no sim. The
log lines are ATOM's formats (model_runner.py get_num_blocks, the runbook's appendix B hook lines)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from rackgate import config, ids
from rackgate.atom import logformat
from rackgate.atom.logs import LogMissing
from rackgate.checks import declared as items
from rackgate.errors import CouldNotObserve, NotRun
from rackgate.gates.declare import Ranked
from rackgate.probes import boot_log
from rackgate.probes.boot import Boot
from rackgate.probes.target import On, ServerLogs
from rackgate.registry import checks
from rackgate.report.verdict import CheckFailed

from ..harness import REPO

pytestmark = pytest.mark.unit

RACK = config.load(REPO / "racks" / "example-gfx1250.toml")  # ct1..ct4, 4 GPUs each, B0


def budget(avail: str = "159.37", blocks: int = 145063) -> str:
    return ("Memory budget: total_gpu=432.00GB, free=431.40GB, utilization=0.9, budget=388.80GB, peak_torch=194.67GB, "
            f"non_torch=24.94GB, cudagraph_est=1.18GB, safety=8.64GB, available_for_kv={avail}GB, "
            f"block_bytes=1179648, num_kvcache_blocks={blocks}")


KV_ERROR = ("RuntimeError: Per-request cache tensor (173.44GB for 3072 slots) exceeds available KV budget (41.23GB) "
            "at --gpu-memory-utilization 0.90.")


def header(pid: int) -> str:
    """ATOM_LOG_MORE's header of a model runner's record (its rank: the pid's process title)."""
    return (f"[atom INFO] 2026-09-24 10:01:11.0 - ModelRunner0/1:{pid} - /app/ATOM/atom/model_engine/model_runner.py:1738"
            " - get_num_blocks")


@dataclass
class FakeLog:
    """A node's server log (rackgate.atom.logs.NodeLog's reading side) over given lines."""
    node: str
    ranks: range
    lines: list[str]
    pids: dict[int, int] = field(default_factory=dict)
    missing: bool = False
    path: str = "/var/log/atom/server.log"

    def grep(self, *patterns: str) -> list[logformat.Record]:
        if self.missing:
            raise LogMissing(f"{self.node}: no server log at {self.path}")
        return [r for r in logformat.records(self.lines) if any(p in r.raw for p in patterns)]

    def rank_of(self, rec: logformat.Record) -> int | None:
        return logformat.rank_of(rec, self.pids)

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.lines[-lines:])


def labelled(node: str, first: int, texts: dict[int, str]) -> FakeLog:
    """A node whose ranks `first`..`first+3` logged `texts[rank]` under their own pid's header."""
    lines = [ln for r, t in texts.items() for ln in (header(5100 + r), t)]
    return FakeLog(node, range(first, first + 4), lines, {5100 + r: r for r in range(first, first + 4)})


HEALTHY = {n: labelled(n, 4 * i, {r: budget() for r in range(4 * i, 4 * i + 4)})
           for i, n in enumerate(("ct1", "ct2", "ct3", "ct4"))}
BOOT_FAILED = Boot("fatal", 40.0, node="ct2", who="ct2/dp5", summary="ct2/dp5: KV budget error", past_rendezvous=("ct1",))


def kv_item(rank: int, logs: dict[str, FakeLog], boot: Boot | None = None) -> tuple[list, list]:
    """One SRV-KV item as the generic module runs it (CheckFailed / CouldNotObserve propagate)."""
    ev: list = []
    fa: list = []
    node = f"ct{rank // 4 + 1}"
    got = boot_log.kv_budgets(ServerLogs(RACK, logs, boot))
    items.judge(checks()["SRV-KV"], RACK, f"{node}/dp{rank}", f"{node}/dp{rank}", _Ev(ev), _Fa(fa),
                lambda: Ranked(rank, node, got))
    return ev, fa


class _Ev:
    def __init__(self, into: list) -> None:
        self.into = into

    def attach(self, name: str, text: str, kind: str = "text") -> None:
        self.into.append((name, text))


class _Fa:
    def __init__(self, into: list) -> None:
        self.into = into

    def record(self, name: str, value: object, where: str = "", unit: str = "", row: str = "") -> None:
        self.into.append((name, value, where, row))


def test_both_rows_are_declared_reading_the_logs_and_old_ids_move():
    c = checks()
    assert (c["SRV-KV"].per, c["SRV-KV"].sees) == ("rank", "log")
    assert (c["SRV-TRANSLATION"].per, c["SRV-TRANSLATION"].sees) == ("node", "log")
    assert ids.check_id("rackgate/checks/serving/test_logs.py::test_kv_budget[ct2-dp5]") == \
        "SRV-KV::ct2-dp5"
    assert ids.check_id("rackgate/checks/serving/test_logs.py::test_translation") == \
        "SRV-TRANSLATION"


def test_each_rank_passes_on_its_own_budget_and_records_it_where_baselines_did():
    ev, fa = kv_item(5, HEALTHY)
    assert ("serving.kv.available_gb", 159.37, "ct2/dp5", "SRV-KV") in fa
    assert ("serving.kv.blocks", 145063, "ct2/dp5", "SRV-KV") in fa
    assert ev and "available_for_kv=159.37GB" in ev[0][1]


def test_one_negative_rank_fails_there_and_nowhere_else():
    logs = dict(HEALTHY, ct2=labelled("ct2", 4, {4: budget(), 5: budget("-33.10"), 6: budget(), 7: budget()}))
    with pytest.raises(CheckFailed) as e:
        kv_item(5, logs)
    assert "ct2/dp5" in str(e.value) and "available_for_kv=-33.10GB" in str(e.value)
    for r in (4, 6, 7, 0, 12):
        kv_item(r, logs)


def test_a_failed_boot_is_judged_on_the_kv_error_it_logged():
    # the boot failed on this very line: the rank is judged, not skipped for the boot's sake
    logs = dict(HEALTHY, ct2=labelled("ct2", 4, {4: budget(), 5: KV_ERROR, 6: budget(), 7: budget()}))
    with pytest.raises(CheckFailed) as e:
        kv_item(5, logs, BOOT_FAILED)
    assert "under the 173.44GB per-request cache for 3072 slots" in str(e.value)


def test_a_node_that_stopped_before_the_arithmetic_is_not_run_pointing_at_the_boot():
    logs = dict(HEALTHY, ct3=FakeLog("ct3", range(8, 12), ["[atom 10:00:01] loading weights"]))
    with pytest.raises(NotRun) as e:
        kv_item(9, logs, BOOT_FAILED)
    assert e.value.root == "SRV-BOOT"
    with pytest.raises(CouldNotObserve, match="no `Memory budget:` line for dp9") as e2:
        kv_item(9, logs, replace(BOOT_FAILED, past_rendezvous=("ct1", "ct3")))  # it got past: nothing to say why
    assert not isinstance(e2.value, NotRun)


def test_a_missing_log_is_its_nodes_ranks_could_not_observe_only():
    logs = dict(HEALTHY, ct4=FakeLog("ct4", range(12, 16), [], missing=True))
    with pytest.raises(CouldNotObserve, match="ct4: no server log"):
        kv_item(13, logs)
    kv_item(1, logs)


def test_unlabelled_lines_are_judged_on_the_nodes_lowest_only_when_every_rank_logged():
    four = [budget(), budget("12.00", 100), budget(), budget()]
    logs = dict(HEALTHY, ct1=FakeLog("ct1", range(0, 4), four))
    _, fa = kv_item(2, logs)
    assert ("serving.kv.available_gb", 12.0, "ct1/dp2", "SRV-KV") in fa
    logs = dict(HEALTHY, ct1=FakeLog("ct1", range(0, 4), four[:3]))
    with pytest.raises(CouldNotObserve, match="3 unlabelled `Memory budget:` lines for 4 ranks"):
        kv_item(2, logs)


def test_an_unparsable_budget_is_could_not_observe_never_healthy():
    logs = dict(HEALTHY, ct2=labelled("ct2", 4, {4: budget(), 5: budget("1.2.3"), 6: budget(), 7: budget()}))
    with pytest.raises(CouldNotObserve, match="available_for_kv"):
        kv_item(5, logs)


INSTALLED = "[hsa-hotswap-rj] installed eager gfx1250 B0-to-A0 hook"
TRANSLATED = ("[hsa-hotswap-rj] eager translation source_id=fnv1a64:44173c6a13023c91 input_revision=b0 "
              "output_revision=a0 outcome=translated changed=23")
REUSED = "[hsa-hotswap-rj] reused tier=aot input_bytes=501616 output_bytes=505712 status=0"


def translation_item(node: str, lines: list[str], rack=RACK, boot: Boot | None = None) -> list:
    fa: list = []
    log = FakeLog(node, range(0, 4), lines)
    on = On(rack, None, node, server_logs=lambda: {node: log}, boot=lambda: boot)  # type: ignore[arg-type]
    items.run(checks()["SRV-TRANSLATION"], on, _Ev([]), _Fa(fa), lambda: boot_log.hotswap(on))
    return fa


def test_a0_with_an_empty_store_fails_on_its_node():
    a0 = RACK.model_copy(update={"silicon": "A0"})
    with pytest.raises(CheckFailed) as e:
        translation_item("ct3", ["[atom 10:00:00] start"] + [INSTALLED] * 4, a0)
    assert "ct3: outcome=translated 0 (want >= 300)" in str(e.value) and "silicon A0" in str(e.value)
    fa = translation_item("ct3", [INSTALLED] * 4 + [TRANSLATED] * 300 + [REUSED] * 100, a0)
    assert ("serving.translation.translated", 300, "ct3", "SRV-TRANSLATION") in fa


def test_b0_zero_translations_pass_but_a_bad_status_fails():
    fa = translation_item("ct1", ["[atom 10:00:00] start", "[atom 10:00:09] Engine kwargs: {}"])
    assert ("serving.translation.installed", 0, "ct1", "SRV-TRANSLATION") in fa
    with pytest.raises(CheckFailed, match="ct1: 1 line"):
        translation_item("ct1", ["[atom 10:00:00] start", "[hsa-hotswap-rj] eager translation translation_status=3"])


def test_an_absence_counts_only_in_a_log_that_says_something_the_suite_reads():
    with pytest.raises(CouldNotObserve, match="is empty"):
        translation_item("ct2", [])
    note = Boot("ready", 30.0, note="the log's lines are not ATOM's format: set launch.log_format")
    with pytest.raises(CouldNotObserve, match="not ATOM's format"):
        translation_item("ct2", ["something else"], boot=note)
