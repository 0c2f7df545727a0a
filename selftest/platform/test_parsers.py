"""PLAT probes: pure parsers on real-format samples (samples/)."""
from pathlib import Path

import pytest

from rackgate.probes import container, dmesg, docker, gpus, perf_setup, procs, shm

pytestmark = pytest.mark.unit

S = Path(__file__).parent / "samples"


def sample(name: str) -> str:
    return (S / name).read_text()


# --- dmesg ---------------------------------------------------------------------------------------
def test_dmesg_lines_timestamps_and_devices():
    lines = dmesg.parse(sample("dmesg_mes_hang.txt"))
    assert len(lines) == 12
    assert lines[0].t == 0.0 and lines[-1].t == 3012.554019
    mes = lines[8]
    assert mes.t == 2841.337201 and mes.device == "0000:65:00.0" and mes.driver == "amdgpu"
    assert mes.text.startswith("amdgpu 0000:65:00.0: amdgpu: MES(0, 0)")
    assert dmesg.parse("no timestamp here\n")[0].t is None


def test_dmesg_window_is_after_the_cursor():
    lines = dmesg.parse(sample("dmesg_mes_hang.txt"))
    after = dmesg.since(lines, 2841.337201)
    assert [ln.t for ln in after] == [2841.337414, 2841.337627, 3012.554019]
    assert dmesg.since(lines, None) == lines


def test_wedged_pattern_matches_every_mes_format():
    for text in ("amdgpu 0000:65:00.0: amdgpu: MES(0, 0) failed to respond to msg=REMOVE_QUEUE",
                 "amdgpu 0000:65:00.0: amdgpu: MES(1) failed to respond to msg=ADD_QUEUE",
                 "amdgpu 0000:c4:00.0: amdgpu: MES failed to respond to msg=MISC (WAIT_REG_MEM)",
                 "[drm:mes_v11_0_submit_pkt_and_poll_completion [amdgpu]] *ERROR* MES failed to response msg=3"):
        assert dmesg.match(dmesg.parse(f"[ 1.0] {text}"), dmesg.PLAT_WEDGED), text
    hits = dmesg.match(dmesg.parse(sample("dmesg_mes_hang.txt")), dmesg.PLAT_WEDGED)
    assert [h.line.t for h in hits] == [2841.337201]


def test_plat_dmesg_patterns_on_real_kernel_lines():
    hits = dmesg.match(dmesg.parse(sample("dmesg_faults.txt")), dmesg.PLAT_DMESG)
    by_t = {h.line.t: h.patterns for h in hits}
    assert by_t[1733.908114] == ("no-retry page fault",)
    assert by_t[1733.908966] == ("Faulty UTCL2 client ID",)
    assert by_t[2105.300001] == ("MES ring buffer is full",)
    assert set(by_t[2210.004519]) == {"SDMA fence timeout", "ring timeout"}
    assert by_t[2210.0047] == ("ring timeout",)
    assert by_t[2210.111] == ("SDMA fence timeout",)
    assert by_t[2211.0] == ("GPU reset",) and by_t[2213.5] == ("GPU reset",)
    # the MES-respond line is PLAT-WEDGED's, not PLAT-DMESG's; healthy boot lines match nothing
    assert 2105.112233 not in by_t
    assert not dmesg.match(dmesg.parse(sample("dmesg_mes_hang.txt"))[:8], dmesg.PLAT_DMESG)


def test_dmesg_ignore_list():
    lines = dmesg.parse(sample("dmesg_faults.txt"))
    hits = dmesg.match(lines, dmesg.PLAT_DMESG, ignore=[r"GPU reset"])
    assert all("GPU reset" not in h.line.text for h in hits)


# --- amd-smi / sysfs ---------------------------------------------------------------------------
def test_amdsmi_static_gpu_data_shape():
    g = gpus.parse_amdsmi_static(sample("amdsmi_static_gpu_data.json"))
    assert [x.index for x in g] == [0, 1, 2]
    assert g[0].hbm_gib == 432 and g[0].bdf == "0000:05:00.0" and g[0].market_name == "AMD Eng Sample"
    assert g[1].hbm_gib == 288 and g[1].market_name is None
    assert g[2].vram_mib is None and g[2].bdf is None  # "N/A" everywhere


def test_amdsmi_static_plain_list_shape():
    g = gpus.parse_amdsmi_static(sample("amdsmi_static_list.json"))
    assert [round(x.hbm_gib, 2) for x in g] == [191.98, 191.98]


@pytest.mark.parametrize("text, msg", [
    ("ERROR:root:Unable to detect any GPU devices", "no JSON"),
    ('{"cpu_data": []}', "no 'gpu_data'"),
    ('"x"', "not a list"),
    ('[1]', "not an object"),
    ('[{"gpu": 0, "vram": {"size": {"value": 1, "unit": "furlong"}}}]', "unknown VRAM unit"),
])
def test_amdsmi_bad_output_is_a_one_line_error(text, msg):
    with pytest.raises(gpus.GpuListError, match=msg):
        gpus.parse_amdsmi_static(text)


def test_amdsmi_value_forms():
    g = gpus.parse_amdsmi_static('[{"gpu": 0, "vram": {"size": "442368 MB"}}, {"gpu": 1, "vram": {"size": 442368}}]')
    assert [x.hbm_gib for x in g] == [432, 432]


def test_sysfs_gpus():
    cards = {0: {"vendor": "0x1002\n", "mem_info_vram_total": f"{432 * 2**30}\n", "uevent": "PCI_SLOT_NAME=0000:05:00.0\n"},
             1: {"vendor": "0x1a03\n", "mem_info_vram_total": None, "uevent": ""},  # the BMC's ASPEED
             2: {"vendor": "0x1002\n", "mem_info_vram_total": None, "uevent": ""}}
    g = gpus.parse_sysfs(cards)
    assert [(x.index, x.bdf, x.hbm_gib) for x in g] == [(0, "0000:05:00.0", 432), (2, None, None)]


# --- docker --------------------------------------------------------------------------------------
def test_docker_ps():
    rows = docker.parse_ps(sample("docker_ps.jsonl"))
    assert [r.name for r in rows] == ["k3ep16", "jdoe-dsr1-bench", "old-scratch", "legacy"]
    assert [r.state for r in rows] == ["running", "running", "exited", "created"]
    assert [r.active for r in rows] == [True, True, False, True]  # "Created" (no State field) is active
    assert rows[1].summary() == "jdoe-dsr1-bench (rocm/vllm-dev:nightly_0915, Up 5 minutes)"


def test_docker_events_both_formats():
    ev = docker.parse_events(sample("docker_events.jsonl"))
    assert [(e.action, e.name, e.time) for e in ev] == [("create", "jdoe-dsr1-bench", 1790582823),
                                                         ("create", "k3ep16", 1790581000)]
    assert ev[0].summary(1790582823 + 300) == "create jdoe-dsr1-bench (rocm/vllm-dev:nightly_0915, 5 min ago)"


def test_docker_inspect():
    info = docker.parse_inspect(sample("docker_inspect.json"))
    assert (info.name, info.status, info.running, info.exit_code) == ("k3ep16", "exited", False, 255)
    assert info.image == "rocm/fw-bringup:gfx1250-atom-20260901-ep4" and info.network_mode == "bridge"
    assert info.devices == ("/dev/dri",)
    assert info.env_dict()["HOTSWAP"] == "0"
    assert docker.parse_inspect("[]") is None


def test_docker_bad_output():
    with pytest.raises(docker.DockerOutputError, match="line 1 is not JSON"):
        docker.parse_ps("CONTAINER ID   IMAGE\n")
    with pytest.raises(docker.DockerOutputError, match="no JSON"):
        docker.parse_inspect("Error: No such object: k3ep16")


# --- /proc and kfd -------------------------------------------------------------------------------
def test_proc_stat():
    p = procs.parse_stat(sample("proc_stat.txt"))
    assert p[48813].comm == "kworker/u1024:7+amdgpu-reset-dev" and p[48813].state == "D"
    assert p[51207].zombie and p[51207].ppid == 51122 and "<defunct>" in p[51207].summary()
    assert p[7001].comm == "weird) name (x)" and p[7001].state == "R"  # comm runs to the LAST ")"
    assert procs.parse_stat("garbage\n12 (x\n") == {}


def test_cgroup_container_ids():
    cid = "77e913276994c5fdeb79bfe5aa16fc8d65870917349d4aa754d89eade5bd1791"
    assert procs.container_id(f"0::/system.slice/docker-{cid}.scope\n") == cid
    assert procs.container_id(f"12:devices:/docker/{cid}\n11:cpu:/docker/{cid}\n") == cid
    assert procs.container_id("0::/user.slice/user-1007.slice/session-41.scope\n") is None
    assert procs.container_id(None) is None


def test_kfd_listing():
    assert procs.parse_kfd_listing(["/sys/class/kfd/kfd/proc/51207", "/sys/class/kfd/kfd/proc/4242", "x/y"]) == [4242, 51207]


# --- perf_setup ------------------------------------------------------------------------------------
def test_perf_report_partial_with_tbp_only():
    r = perf_setup.parse_report(sample("perf_setup_report_partial.log"))
    assert (r.steps_passed, r.steps_failed, r.result, r.mode) == (8, 0, "PARTIAL", "D")
    assert r.steps_line == "Perf steps: 8 passed, 0 failed"
    assert r.mode_line == "driver load : D — MTYPE=RW, XNACK=disabled"


def test_perf_report_last_summary_wins_and_missing_lines():
    r = perf_setup.parse_report("Perf steps: 3 passed, 5 failed\nResult: [FAIL]\n...\nPerf steps: 7 passed, 1 failed\n")
    assert (r.steps_passed, r.steps_failed, r.result) == (7, 1, "FAIL")
    assert perf_setup.parse_report("aborted\n") == perf_setup.PerfReport(None, None, None, None, None, None)


def test_boot_time_and_report_files():
    b = perf_setup.parse_boot("2026-09-21 09:12:03\n1790579523\n")
    assert (b.since, b.epoch) == ("2026-09-21 09:12:03", 1790579523)
    with pytest.raises(ValueError, match="unexpected `uptime -s` output"):
        perf_setup.parse_boot("uptime: invalid option -- 's'\n")
    files = perf_setup.parse_stat_lines("1790579000 /opt/amd-apps/perf_setup_BPC21_report_a.log\n"
                                        "1790580000 /opt/amd-apps/perf_setup_BPC21_report_b.log\n")
    assert files[0].path.endswith("_b.log") and files[0].mtime == 1790580000


# --- in the container ------------------------------------------------------------------------------
def test_python_attribute_error_is_the_last_traceback_line():
    stderr = ('Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
              '  File "/app/ATOM/atom/utils/envs.py", line 80, in __getattr__\n'
              "    raise AttributeError(f\"module {__name__!r} has no attribute {name!r}\")\n"
              "AttributeError: module 'atom.utils.envs' has no attribute 'ATOM_UNFUSED_GATHER_KV_B_PROJ'\n")
    r = container.parse_python(1, "", stderr)
    assert r.error == "AttributeError: module 'atom.utils.envs' has no attribute 'ATOM_UNFUSED_GATHER_KV_B_PROJ'"
    assert container.parse_python(0, "False\n", "").value == "False"
    assert container.parse_python(1, "", "ModuleNotFoundError: No module named 'atom'\n").error.startswith(
        "ModuleNotFoundError")


def test_stat_sizes_and_shm():
    text = "7499 /app/ATOM/atom/model_ops/mla_unfused_gather.py\n__rackgate_missing__ /app/ATOM/atom/x.py\n0 /a b.py\n"
    assert container.parse_sizes(text) == {"/app/ATOM/atom/model_ops/mla_unfused_gather.py": 7499,
                                           "/app/ATOM/atom/x.py": None, "/a b.py": 0}
    segs = shm.parse_stat("9637888 1790581234 /dev/shm/nccl-Qx81Vd\n")
    assert segs == [shm.Segment("/dev/shm/nccl-Qx81Vd", 9637888, 1790581234)]


def test_split_runs_of_one_exec():
    text = ("Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
            "AttributeError: module 'atom.utils.envs' has no attribute 'ATOM_UNFUSED_GATHER_KV_B_PROJ'\n"
            "__rackgate_run__ 1\nTrue\n__rackgate_run__ 0\n")
    runs = container.split_runs(text)
    assert [rc for rc, _ in runs] == [1, 0] and runs[1][1] == "True\n"
    assert container.parse_python(1, "", runs[0][1]).error.startswith("AttributeError: module 'atom.utils.envs'")
