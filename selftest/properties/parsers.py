"""Every parser in rackgate/probes and rackgate/atom, with the real lines its strategy starts from
(the runbook's quoted output, ATOM's and the tools' format strings, the samples under
selftest/*/samples) and what would count as a healthy fact from it.

`healthy(out)` names the fact a check passes on (None: the parser yields no verdict by itself);
garbage must never produce it."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rackgate.atom import logfacts, logformat, rootcause, signatures
from rackgate.probes import (
    aer,
    amdsmi,
    bench,
    collective,
    container,
    dmesg,
    docker,
    drm,
    gpus,
    modules,
    perf_setup,
    procs,
    ras,
    shm,
    ualink,
    ubench,
)

from ..fabric import test_parsers as fab
from ..platform import test_aer as ta
from ..platform import test_drm
from ..platform import test_ras as rs
from ..platform import test_ras_layouts as rl
from ..serving import test_bench_clients as bc
from ..serving import test_bench_parse as bp
from ..serving import test_logs_parse as lp
from ..serving import test_rootcause as rc

PLAT = Path(__file__).resolve().parent.parent / "platform" / "samples"


def _sample(name: str) -> str:
    return (PLAT / name).read_text()


@dataclass(frozen=True)
class Parser:
    name: str
    fn: Callable[[str], object]
    samples: tuple[str, ...]
    healthy: Callable[[object], bool] | None = None
    known_bug: str = ""  # a crash found here in a file another helper owns (strict xfail until fixed)


def _link(text: str):
    raw = {}
    for line in text.split("\n"):
        k, _, v = line.partition("\t")
        if k in ualink.ATTRS:
            raw[k] = v
    link = ualink.parse_link(0, raw)
    return link, ualink.state_kind(link.accel_state, ["active", "ready"], ["error"]), link.local_accel_ids


def _records(text: str):
    recs = list(logformat.records(text.split("\n")))
    return [(r, logformat.rank_of(r)) for r in recs]


def _hotswap(text: str):
    c = logfacts.HotswapCounts()
    for line in text.split("\n"):
        c.add(line)
    return c


BUDGET_LINE = lp.BUDGET
SYNC = "[atom 13:38:47] Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms"
MEGAMOE = ("[MORI-V2] Created MegaMoE: ep_rank=5 ep_size=16 hidden=7168 inter=2048 experts=896 topk=8 M=4096 "
           "act=silu gate=noaux_tc quant=fp4 pad=(0,0) swiglu_limit=None dispatch=mori wire=bf16 force_a8w4=False")
KV_ERR = ("RuntimeError: Per-request cache tensor (3.35GB for 8 slots) exceeds available KV budget (-17.63GB) at "
          "--gpu-memory-utilization 0.94. Set --gpu-memory-utilization >= 0.99")
LSMOD = "Module                  Size  Used by\namdgpu              19234816  0\nifoe                  262144  1 amdgpu\n"
PS_UBENCH = ("  PID  PGID ARGS\n 4242  4242 /root/ubench-20260712/07_ualoe/build/ualoe_bw.exe -listen -port=55560\n"
             " 4300  4299 bash -c pkill -f ualoe\n")
STAT_SIZES = f"1048576 /opt/rocm/lib/libamdhip64.so\n{container._MISSING} /app/rjprefix\n"
SHM = "2147483648 1758450000 /dev/shm/aiter_shm_0\n4096 1758450100 /dev/shm/psm_1\n"
PERF_STAT = "1758450000 /root/perf_setup_BPC21_20260921.log\n1758440000 /root/perf_setup_BPC21_20260920.log\n"
BOOT = "2026-09-21 08:58:10\n1758437890\n"
PID_TITLES = "   5150 ATOM::DP5TP0    ATOM::DP5TP0\n  5149 ATOM::EngineCo ATOM::EngineCore_DP5\n"
BENCH_CMD = ("python3 -m atom.benchmarks.benchmark_serving --model /models/Kimi-K3 --served-model-name Kimi-K3 "
             "--dataset-name random --random-input-len 1024 --num-prompts 256 --max-concurrency 64")
LINK = "\n".join(f"{k}\t{v.strip()}" for k, v in fab.HEALTHY.items())

PARSERS = [
    Parser("amdsmi.parse_fabric", amdsmi.parse_fabric,
           (fab.TEXT, fab.OTHER_LAYOUT, json.dumps([fab._json_rec(0, {"value": 0, "unit": "Mb/s"})]),
            json.dumps({"gpu_data": [fab._json_rec(1, "0 Mb/s", aid=5)]})),
           lambda out: any(g.accelerator_id is not None for g in out)),
    Parser("gpus.parse_amdsmi_static", gpus.parse_amdsmi_static,
           (_sample("amdsmi_static_gpu_data.json"), _sample("amdsmi_static_list.json")), lambda out: bool(out)),
    Parser("ualink.parse_link", _link, (LINK,), lambda out: out[1] == "trained" and out[0].accel_id is not None),
    Parser("drm.parse_listing", lambda t: drm.GpuMap.of("n", drm.parse_listing(t, "n")), (test_drm.BMC_TRAY,),
           lambda out: out.mismatch(4) is None),
    Parser("ubench.parse_p2p", ubench.parse_p2p,
           ("[exporter] listening on port 55559\nRESULT OK: 4/4 pairs PASS\n",
            "[FATAL] ualoe_p2p.cpp:49 hipMemSetAccess(...) -> invalid argument\n"), lambda out: out.ok),
    Parser("ubench.parse_bw", ubench.parse_bw,
           tuple(fab.BW_LAYOUTS.values()) + ("size  read  write  bidir\n1MB 100.0 120.0 200.0\n"
                                             "1GB 2029.4 3192.0 3986.1\n",), lambda out: out.final is not None),
    Parser("ubench.parse_ps", ubench.parse_ps, (PS_UBENCH,)),
    Parser("bench.serving_result", lambda t: bench.serving_result(t, None), (bp.GOOD, bp.ALL_404),
           lambda out: bool(out.completed) and out.failed == 0),
    Parser("bench.serving_result+json", lambda t: bench.serving_result(bp.GOOD, t), (bp.GOOD_JSON,),
           lambda out: False),  # healthy only from a JSON whose fields all read: garbage must raise
    Parser("bench.serving_result+sglang",
           lambda t: bench.serving_result(bc.sglang_table(32, 32768, 94), t, "sglang.bench_serving"),
           (bc.OLD_RUN + "\n" + json.dumps(bc.sglang_record(["a b c"] * 31 + [""])) + "\n",),
           lambda out: False),  # healthy only from a record whose fields all read: garbage must raise or be empty
    Parser("bench.aiperf_result", bench.aiperf_result, (bp.aiperf(False, 53, 0), bp.aiperf(True, 89, 11)),
           lambda out: bool(out.completed) and out.failed == 0),
    Parser("bench.command", bench.command, (BENCH_CMD,)),
    Parser("collective.parse", collective.parse, (fab.NCCL_HEALTHY, fab.NCCL_HANG),
           lambda out: any(w.status == "ok" for w in out.worlds.values())),
    Parser("aer.records", lambda t: aer.records([(ln.t, ln.raw) for ln in dmesg.parse(t)]), ta.SAMPLES + (ta.NIC,)),
    Parser("aer.parse_topology", lambda t: aer.parse_topology(t, "n", 4), (test_drm.BMC_TRAY,)),
    Parser("dmesg.parse", dmesg.parse, (_sample("dmesg_faults.txt"), _sample("dmesg_mes_hang.txt"))),
    Parser("docker.parse_ps", docker.parse_ps, (_sample("docker_ps.jsonl"),)),
    Parser("docker.parse_events", docker.parse_events, (_sample("docker_events.jsonl"),)),
    Parser("docker.parse_inspect", docker.parse_inspect, (_sample("docker_inspect.json"),)),
    Parser("modules.parse_lsmod", modules.parse_lsmod, (LSMOD,), lambda out: "amdgpu" in out),
    Parser("perf_setup.parse_report", perf_setup.parse_report, (_sample("perf_setup_report_partial.log"),),
           lambda out: out.result == "PASS" and out.failed == 0),
    Parser("perf_setup.parse_stat_lines", perf_setup.parse_stat_lines, (PERF_STAT,)),
    Parser("perf_setup.parse_boot", perf_setup.parse_boot, (BOOT,)),
    Parser("procs.parse_stat", procs.parse_stat, (_sample("proc_stat.txt"),)),
    Parser("shm.parse_stat", shm.parse_stat, (SHM,)),
    Parser("container.parse_sizes", container.parse_sizes, (STAT_SIZES,)),
    Parser("container.split_runs", container.split_runs, (f"hello\n{container._RUN} 0\nworld\n{container._RUN} 1\n",)),
    Parser("logformat.records", _records, (lp.MORE + "\n" + SYNC + "\n" + "\n".join(lp.RUNBOOK_DEADLOCK),
                                           "EngineCore-DP3 " + SYNC + "\n[aiter] load RCCL version: 2.27.7")),
    Parser("logformat.pid_ranks", logformat.pid_ranks, (PID_TITLES,)),
    Parser("logfacts.memory_budget", logfacts.memory_budget, (BUDGET_LINE,),
           lambda out: out is not None and out.available_for_kv > 0),
    Parser("logfacts.kv_error", logfacts.kv_error, (KV_ERR,)),
    Parser("logfacts.experts", logfacts.experts, (MEGAMOE,), lambda out: out == 896),
    Parser("logfacts.kv_usage", logfacts.kv_usage, (lp.RUNBOOK_DEADLOCK[0],)),
    Parser("logfacts.engine_kwargs", logfacts.engine_kwargs, (lp.KWARGS,)),
    Parser("logfacts.sync_dp_failed", logfacts.sync_dp_failed, (SYNC,)),
    Parser("logfacts.HotswapCounts", _hotswap, ("[hsa-hotswap-rj] installed eager gfx1250 B0-to-A0 hook\n"
                                                "[hsa-hotswap-rj] reused tier=aot input_bytes=501616 status=0",)),
    Parser("ras.parse", lambda t: ras.parse(t, "n", 4), (rs.NODE, rs.UE),
           lambda out: len(out.gpus) == 4 and all(g.blocks for g in out.gpus)),
    Parser("ras.parse+kmsg", lambda t: ras.parse(t, "n", 1), (ta._snapshot_text(ta.FATAL_OLD + ta.CORRECTED_OLD),)),
    Parser("ras.parse+aca", lambda t: ras.parse(t, "n", 4), (rl.node(rl.ACA_ERA),),
           lambda out: len(out.gpus) == 4 and all(g.blocks for g in out.gpus)),
    Parser("ras.parse_event_state", lambda t: ras.parse_event_state(t, "n/ras/event_state"), (rl.EVENTS, rl.EVENTS_FIRST)),
    Parser("ras.parse_err_count", lambda t: ras.parse_err_count(t, "n/ras/umc_err_count"), (rs.UMC_COUNT, rs.ERR_COUNT),
           lambda out: out is not None and out.ue == 0),
    Parser("ras.parse_throttle", ras.parse_throttle, (rs.THROTTLE_JSON,), lambda out: len(out) == 4),
    Parser("ras.parse_bad_pages", lambda t: ras.parse_bad_pages(t, "n"), (rs.BAD_PAGES,)),
    Parser("ras.parse_aer", lambda t: ras.parse_aer(t, "n", "aer_dev_fatal"), (rs.AER_FATAL,),
           lambda out: out["TOTAL_ERR_FATAL"] == 0),
    Parser("rootcause.find", lambda t: rootcause.find([t]),
           tuple("\n".join(x) for x in (rc.JIT, rc.JIT_HEADER, rc.ROCBLAS, rc.VLLM))),
    Parser("signatures.match", signatures.match,
           ("\x1b[31mMemory access fault by GPU node-2 (Agent handle: 0x5a)\x1b[0m", KV_ERR)),
]
