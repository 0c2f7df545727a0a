"""PLAT judgments (rackgate.gates.plat): each finding on its fact, and silence on health."""
from pathlib import Path

import pytest

from rackgate.config.platform import PrefixExpect
from rackgate.errors import CouldNotObserve
from rackgate.gates import plat as judge
from rackgate.probes import docker, gpus, perf_setup, procs

pytestmark = pytest.mark.unit

S = Path(__file__).parent / "samples"
BOOT = perf_setup.Boot("2026-09-21 09:12:03", 1790579523)
GOOD = {"mtype_local": "0", "noretry": "1"}


def tuning(mtime: int, report: str) -> perf_setup.TuningFacts:
    f = perf_setup.ReportFile("/opt/amd-apps/perf_setup_BPC21_report_x.log", mtime)
    return perf_setup.TuningFacts(BOOT, f, perf_setup.parse_report(report), report)


PARTIAL = (S / "perf_setup_report_partial.log").read_text()


def test_tuned_healthy_partial_tbp():
    assert judge.tuned(tuning(BOOT.epoch + 420, PARTIAL), GOOD, ["mtype_local", "noretry"]) == []


def test_tuned_report_older_than_boot():
    bad = judge.tuned(tuning(BOOT.epoch - 3600, PARTIAL), GOOD, ["mtype_local", "noretry"])
    assert len(bad) == 1 and "older than this boot (uptime -s: 2026-09-21 09:12:03)" in bad[0]


def test_tuned_failed_steps_and_mode_d_without_params():
    bad = judge.tuned(tuning(BOOT.epoch + 420, PARTIAL.replace("8 passed, 0 failed", "7 passed, 1 failed")),
                      {"mtype_local": "-1", "noretry": "-1"}, ["mtype_local", "noretry"])
    assert "'Perf steps: 7 passed, 1 failed'" in bad[0]
    assert "mtype_local=-1 noretry=-1: amdgpu was already loaded when perf_setup ran" in bad[1]


def test_tuned_no_report_or_unfinished():
    none = perf_setup.TuningFacts(BOOT, None, None, "")
    with pytest.raises(CouldNotObserve, match="no perf_setup report matches platform.perf_report_glob"):
        judge.tuned(none, GOOD, [])  # no report says nothing about the tuning: could not observe
    assert "did not finish" in judge.tuned(tuning(BOOT.epoch + 9, "starting...\n"), GOOD, [])[0]


def test_gpus():
    g = gpus.parse_amdsmi_static((S / "amdsmi_static_gpu_data.json").read_text())
    facts = gpus.GpuFacts(g, "amd-smi", "")
    bad = judge.gpus(facts, 4, 432, 1.0)
    assert bad[0].startswith("3 GPUs, expected 4")
    assert any("HBM size not reported for gpu2" in b for b in bad)
    assert "mixed HBM sizes: 288 GiB on gpu1; 432 GiB on gpu0" in bad
    ok = gpus.GpuFacts([gpus.Gpu(i, None, None, 442368) for i in range(4)], "amd-smi", "")
    assert judge.gpus(ok, 4, 432, 1.0) == []
    assert "the rack file says platform.hbm_gib = 288" in judge.gpus(ok, 4, 288, 1.0)[0]
    assert "sees no GPU (expected 4): Unable to detect" in judge.gpus(
        gpus.GpuFacts([], "amd-smi", "", "Unable to detect any GPU devices"), 4, None, 1.0)[0]


def test_free():
    rows = docker.parse_ps((S / "docker_ps.jsonl").read_text())
    events = docker.parse_events((S / "docker_events.jsonl").read_text())
    own_id = rows[0].id
    table = procs.parse_stat((S / "proc_stat.txt").read_text())
    users = {51122: (table[51122], own_id), 51207: (table[51207], own_id), 61234: (procs.Proc(61234, "python3", "S", 1), None)}
    bad = judge.free(rows, events, users, {"k3ep16"}, 1790582823 + 300)
    assert bad[0] == "foreign containers: jdoe-dsr1-bench (rocm/vllm-dev:nightly_0915, Up 5 minutes), legacy (busybox, Created)"
    assert bad[1] == "recent creates (docker events): create jdoe-dsr1-bench (rocm/vllm-dev:nightly_0915, 5 min ago)"
    assert bad[2] == "processes holding /dev/kfd: pid 61234 (python3) in the host"
    assert judge.free(rows[:1] + rows[2:3], events[1:], {51122: (table[51122], own_id)}, {"k3ep16"}, 0) == []


def test_wedge_signals():
    table = procs.parse_stat((S / "proc_stat.txt").read_text())
    assert procs.stale_kfd([51207, 51122, 99999], table) == ["kfd entry 51207 held by ATOM::DP8TP0 <defunct>",
                                                            "kfd entry 99999 (process gone)"]
    assert procs.d_state_kworkers(table) == ["kworker/u1024:7+amdgpu-reset-dev (pid 48813) in D"]
    assert procs.defunct_engines(table, [r"^ATOM::"]) == ["ATOM::DP8TP0 (pid 51207) <defunct>"]


def test_container():
    info = docker.parse_inspect((S / "docker_inspect.json").read_text())
    bad = judge.container(info, "k3ep16", "rocm/fw-bringup:gfx1250-atom-20260918-ep8", "host", ["/dev/kfd", "/dev/dri"])
    assert bad == ["container k3ep16 is exited (exit code 255)",
                   "image 'rocm/fw-bringup:gfx1250-atom-20260901-ep4', expected 'rocm/fw-bringup:gfx1250-atom-20260918-ep8'",
                   "network mode 'bridge', expected 'host' (--network=host)",
                   "devices /dev/kfd not passed (HostConfig.Devices: /dev/dri)"]
    assert "no container named 'k3ep16'" in judge.container(None, "k3ep16", "", "host", [])[0]


def test_patch_sizes():
    want = {"/app/ATOM/atom/utils/envs.py": 47967, "/app/ATOM/atom/model_ops/mla_unfused_gather.py": 7499}
    got = {"/app/ATOM/atom/utils/envs.py": 47810, "/app/ATOM/atom/model_ops/mla_unfused_gather.py": 0}
    assert judge.patch_sizes(got, want, ("/a.py", 0, 3)) == [
        "/app/ATOM/atom/utils/envs.py is 47810 B, want 47967 B",
        "/app/ATOM/atom/model_ops/mla_unfused_gather.py is 0 bytes (want 7499 B): an interrupted docker cp",
        "grep -c in /a.py prints 0, want 3"]


def test_effective_env_expands_like_export():
    base = {"LD_LIBRARY_PATH": "/opt/rocm/lib", "HOTSWAP": "1"}
    env = judge.effective_env(base, {"LD_LIBRARY_PATH": "/app/rjprefix/lib:$LD_LIBRARY_PATH", "X": "${NOPE}y"})
    assert env["LD_LIBRARY_PATH"] == "/app/rjprefix/lib:/opt/rocm/lib" and env["X"] == "y" and env["HOTSWAP"] == "1"


def test_prefix():
    cfg = PrefixExpect()
    root = cfg.root()
    good_sizes = {f"{root}/{cfg.hook}": 129112, f"{root}/{cfg.translator}": 8002216}
    env = {"HSA_TOOLS_LIB": f"{root}/lib/libhsa_hotswap_rocjitsu.so", "LD_LIBRARY_PATH": f"{root}/lib:/opt/rocm/lib"}
    assert judge.prefix(root, cfg, good_sizes, 1976, env) == []
    image = {f"{root}/{cfg.hook}": 143217, f"{root}/{cfg.translator}": 7531385}
    bad = judge.prefix(root, cfg, image, 170, {**env, "HSA_TOOLS_LIB": f"{root}/lib/librocjitsu_gfx1250_b0_to_a0.so.0",
                                                 "LD_LIBRARY_PATH": "/opt/rocm/lib:/app/rjprefix/lib", "HOTSWAP": "0"})
    assert bad == [
        "/app/rjprefix/lib/libhsa_hotswap_rocjitsu.so is 143217 B (the image's own copy), want 129112 B",
        "/app/rjprefix/lib/librocjitsu_gfx1250_b0_to_a0.so.0.3.0 is 7531385 B (the image's own copy), want 8002216 B",
        "/app/rjprefix/share/rocjitsu/translations/gfx1250-b0-a0/v1 has 170 entries (the image's own store), want 1976",
        "HSA_TOOLS_LIB=/app/rjprefix/lib/librocjitsu_gfx1250_b0_to_a0.so.0 points at the translator: it has no OnLoad, "
        "HSA ignores it silently",
        "LD_LIBRARY_PATH='/opt/rocm/lib:/app/rjprefix/lib': /app/rjprefix/lib is not first",
        "HOTSWAP=0: translation switched off (not a fallback on A0)"]
    assert "HSA_TOOLS_LIB is not set" in judge.prefix(root, cfg, good_sizes, 1976, {"LD_LIBRARY_PATH": f"{root}/lib"})[0]


def test_a_wedge_is_what_the_second_look_still_shows_and_nothing_is_healthy():
    from rackgate.probes import dmesg
    from rackgate.probes.wedge import Wedge
    hits = dmesg.match(dmesg.parse((S / "dmesg_mes_hang.txt").read_text()), dmesg.PLAT_WEDGED)
    assert hits
    assert judge.wedged(Wedge([], [], [], ["ATOM::DP8TP0 (pid 51207) <defunct>"], 0.0), None, "node3") == []
    found = judge.wedged(Wedge(hits, ["kfd entry 51207 held by ATOM::DP8TP0 <defunct>"], [], [], 10.0), None, "node3")
    assert found[0].startswith("dmesg: ") and found[1] == ("kfd list does not drain after 10s: "
                                                             "kfd entry 51207 held by ATOM::DP8TP0 <defunct>")
