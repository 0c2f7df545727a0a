"""ATOM log parsers on samples in ATOM's exact formats (atom/utils/__init__.py, model_runner.py,
arg_utils.py, engine_core.py) and the runbook's quoted lines."""
import pytest

from rackgate.atom import logfacts, logformat

pytestmark = pytest.mark.unit

MORE = ("[atom WARNING] 2026-09-24 13:38:47.1 - EngineCore-DP11:4242 - /app/ATOM/atom/model_engine/engine_core.py:711"
        " - _sync_dp_state")
BUDGET = ("Memory budget: total_gpu=432.00GB, free=431.40GB, utilization=0.9, budget=388.80GB, peak_torch=194.67GB, "
          "non_torch=24.94GB, cudagraph_est=1.18GB, safety=8.64GB, available_for_kv=159.37GB, block_bytes=1179648, "
          "num_kvcache_blocks=145063")


def test_default_format_has_no_rank():
    (rec,) = logformat.records(["[atom 13:38:47] Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms"])
    assert rec.time == "13:38:47" and rec.text.startswith("Engine Core:") and logformat.rank_of(rec) is None


def test_log_more_header_names_the_engine_core_rank():
    (rec,) = logformat.records([MORE, "Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms"])
    assert (rec.process, rec.pid, rec.level, rec.lineno) == ("EngineCore-DP11", 4242, "WARNING", 2)
    assert logformat.rank_of(rec) == 11 and logformat.who(rec, "node3") == "node3/dp11"


def test_model_runner_rank_comes_from_its_process_title():
    hdr = "[atom INFO] 2026-09-24 10:01:11.0 - ModelRunner0/1:5150 - /app/ATOM/atom/model_engine/model_runner.py:1738 - get_num_blocks"
    (rec,) = logformat.records([hdr, BUDGET])
    assert logformat.rank_of(rec) is None
    pids = logformat.pid_ranks("   5150 ATOM::DP5TP0    ATOM::DP5TP0\n 5100 python3 python3 -m atom.entrypoints.openai_server\n"
                               "  5149 ATOM::EngineCo ATOM::EngineCore_DP5\n")
    assert pids == {5150: 5, 5149: 5}
    assert logformat.rank_of(rec, pids) == 5


def test_messages_that_name_their_rank():
    (rec,) = logformat.records(["[atom 13:08:38] Engine 011: prompt throughput: 0.0 tok/s, Running: 1, KV usage: 98.6%"])
    assert logformat.rank_of(rec) == 11


def test_raw_lines_and_tqdm_carriage_returns():
    recs = list(logformat.records(["Loading 1/96\rLoading 2/96\r", "[hsa-hotswap-rj] installed eager gfx1250 B0-to-A0 hook"]))
    assert [r.text for r in recs] == ["Loading 1/96", "Loading 2/96", "[hsa-hotswap-rj] installed eager gfx1250 B0-to-A0 hook"]
    assert not recs[-1].is_atom


def test_memory_budget_figures():
    b = logfacts.memory_budget(BUDGET)
    assert (b.total_gpu, b.utilization, b.budget, b.peak_torch, b.available_for_kv, b.num_kvcache_blocks) == \
        (432.0, 0.9, 388.8, 194.67, 159.37, 145063)
    assert logfacts.memory_budget(BUDGET.replace("159.37GB", "-33.10GB")).available_for_kv == -33.10
    assert logfacts.memory_budget("Memory budget: nothing here") is None


def test_experts():
    assert logfacts.experts("Created MegaMoE ... experts=56 ... dispatch=mori wire=fp4") == 56


KWARGS = ("Engine kwargs: {'served_model_name': 'moonshotai/Kimi-K3', 'max_model_len': None, "
          "'torch_profiler_dir': '/data/profile_run', 'kv_cache_block_size': 16, "
          "'compilation_config': CompilationConfig(level=3, cudagraph_mode=<CUDAGraphMode.FULL: 2>, "
          "cudagraph_capture_sizes=[1, 2, 4]), 'speculative_config': None, "
          "'dspark': DSparkConfig(enabled=False), 'eplb_config': EPLBConfig(enable=False), 'ratio': 0.9, "
          "'flags': {'a': (1, 2)}, 'mode': <RunMode.SERVE: 'serve'>}")


def test_engine_kwargs_with_objects_in_the_repr():
    kw = logfacts.engine_kwargs("[atom 10:00:01] " + KWARGS)
    assert kw["max_model_len"] is None and kw["torch_profiler_dir"] == "/data/profile_run"
    assert kw["kv_cache_block_size"] == 16 and kw["ratio"] == 0.9 and kw["flags"] == {"a": (1, 2)}
    assert isinstance(kw["compilation_config"], logfacts.Unparsed)
    assert "<CUDAGraphMode.FULL: 2>" in kw["compilation_config"]
    assert kw["mode"] == "<RunMode.SERVE: 'serve'>" or isinstance(kw["mode"], str)


def test_engine_kwargs_never_executes_anything():
    kw = logfacts.engine_kwargs("Engine kwargs: {'x': __import__('os').system('echo pwned'), 'max_model_len': 4096}")
    assert isinstance(kw["x"], logfacts.Unparsed) and kw["max_model_len"] == 4096


@pytest.mark.parametrize("bad", ["Engine kwargs: {'a': ", "Engine kwargs: [1, 2]", "no kwargs here"])
def test_engine_kwargs_bad_input_is_one_line(bad):
    with pytest.raises(logfacts.KwargsError) as e:
        logfacts.engine_kwargs(bad)
    assert "\n" not in str(e.value)


def test_sync_dp_state_line_from_the_runbook():
    assert logfacts.sync_dp_failed("Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms") == \
        "Timed out waiting 1800000ms"
    assert logfacts.sync_dp_failed("Engine Core: All DP ranks agreed to shutdown, exiting busy_loop") is None


def test_hotswap_counts_like_grep_c():
    c = logfacts.HotswapCounts()
    for line in ["[hsa-hotswap-rj] installed eager gfx1250 B0-to-A0 hook",
                 "[hsa-hotswap-rj] eager translation source_id=fnv1a64:44173c6a13023c91 input_revision=b0 "
                 "output_revision=a0 outcome=translated changed=23",
                 "    input_revision=b0 output_revision=a0 outcome=translated changed=23 ...",
                 "[hsa-hotswap-rj] reused tier=aot input_bytes=501616 output_bytes=505712 status=0",
                 "[hsa-hotswap-rj] eager translation translation_status=3"]:
        c.add(line)
    assert (c.installed, c.translated, c.reused, c.bad_status) == (1, 2, 1, 1)


# --- real formats (issue 11): the runbook's quoted lines and ATOM's source format strings ------
RUNBOOK_DEADLOCK = ["[13:08:38] Engine 011: prompt throughput: 0.0 tok/s, Running: 1, KV usage: 98.6%",
                    "[13:38:47] Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms",
                    "[13:38:47] Engine Core: All DP ranks agreed to shutdown, exiting busy_loop"]


def test_runbook_lines_without_the_logger_name():
    kv, sync, _ = logformat.records(RUNBOOK_DEADLOCK)
    assert (kv.time, logformat.rank_of(kv)) == ("13:08:38", 11) and logfacts.kv_usage(kv.text) == 98.6
    assert sync.time == "13:38:47" and sync.text.startswith("Engine Core: _sync_dp_state failed")
    assert logfacts.sync_dp_failed(sync.text) == "Timed out waiting 1800000ms"


@pytest.mark.parametrize("line, rank, pid", [
    ("EngineCore-DP3 [atom 13:38:47] Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms", 3, None),
    ("(EngineCore_DP3 pid=4242) Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms", 3, 4242),
    ("[atom 13:38:47] EngineCore-DP7:99: Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms", 7, 99),
    ("[13:38:47] EngineCore_DP12 Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms", 12, None),
])
def test_process_name_prefix_names_the_rank(line, rank, pid):
    (rec,) = logformat.records([line])
    assert (logformat.rank_of(rec), rec.pid) == (rank, pid)
    assert logfacts.sync_dp_failed(rec.text) == "Timed out waiting 1800000ms"


def test_megamoe_line_names_its_ep_rank():
    line = ("[atom 10:00:00] [MORI-V2] Created MegaMoE: ep_rank=5 ep_size=16 hidden=7168 inter=2048 experts=896 "
            "topk=8 M=4096 act=silu gate=noaux_tc quant=fp4 pad=(0,0) swiglu_limit=None dispatch=mori")
    (rec,) = logformat.records([line])
    assert logformat.rank_of(rec) == 5 and logfacts.experts(rec.text) == 896


def test_one_log_per_rank_attributes_every_line_to_its_rank():
    from rackgate.atom.logs import NodeLog, per_rank
    logs = per_rank("node3", None, "/var/log/atom-{node}-dp{rank}.log".replace("{node}", "node3"), range(8, 12))
    assert [(l.path, l.rank, list(l.ranks)) for l in logs][1] == ("/var/log/atom-node3-dp9.log", 9, [9])
    (rec,) = logformat.records([RUNBOOK_DEADLOCK[1]])
    assert isinstance(logs[1], NodeLog) and logs[1].rank_of(rec) == 9


def test_ansi_colour_and_crlf_are_removed_before_matching():
    (rec,) = logformat.records(["\x1b[33m[atom 13:38:47]\x1b[0m Engine Core: \x1b[1m_sync_dp_state failed\x1b[0m: "
                                "Timed out waiting 1800000ms\r\n"])
    assert rec.time == "13:38:47" and logfacts.sync_dp_failed(rec.text) == "Timed out waiting 1800000ms"


def test_kv_error_alone_is_read_when_it_comes_before_the_budget():
    # Current ATOM raises before it logs `Memory budget:` (model_runner.py): the error is all there is.
    line = ("RuntimeError: Per-request cache tensor (173.44GB for 3072 slots) exceeds available KV budget "
            "(41.23GB) at --gpu-memory-utilization 0.90.")
    e = logfacts.kv_error(line)
    assert (e.reserved_gb, e.slots, e.available_gb, e.utilization) == (173.44, 3072, 41.23, 0.90)
    from rackgate.gates import serverlogs
    out = serverlogs.kv([], [], 0.0, serverlogs.expert_counts(896, 16), [e])
    assert len(out) == 1 and "41.23GB" in out[0] and "173.44GB" in out[0] and "no `Memory budget:`" not in out[0]


@pytest.mark.parametrize("bad", ["Memory budget: total_gpu=432.00GB, available_for_kv=1.2.3GB",
                                 "Memory budget: available_for_kv=159.37GB, num_kvcache_blocks=1.5",
                                 "Per-request cache tensor (1.2.3GB for 8 slots) exceeds available KV budget (1GB)"])
def test_unparseable_figures_are_could_not_observe(bad):
    from rackgate.errors import CouldNotObserve
    with pytest.raises(CouldNotObserve) as e:
        logfacts.memory_budget(bad) if bad.startswith("Memory") else logfacts.kv_error(bad)
    assert "\n" not in str(e.value)
