"""Expectations for the PLAT rows (one node, before anything else).

Every number here is a rack-file setting under [platform]; the defaults are the runbook's
validated values for image rocm/fw-bringup:gfx1250-atom-20260918-ep8 on B0 silicon.
"""
from __future__ import annotations

from pydantic import Field

from .base import Section


class PrefixExpect(Section):
    """PLAT-PREFIX: the rocjitsu B0->A0 translation prefix installed in the container (Appendix B)."""
    # Where the prefix lives inside the container. Empty: no prefix configured (then the check
    # applies on A0 silicon only, at the runbook's /app/rjprefix).
    path: str = ""
    # The hook HSA loads (HSA_TOOLS_LIB must name it), relative to the prefix, and its size.
    hook: str = "lib/libhsa_hotswap_rocjitsu.so"
    hook_bytes: int = Field(default=129112, ge=0)
    # The translator the hook loads (NEEDED); it has no OnLoad, so HSA ignores it as a tools lib.
    translator: str = "lib/librocjitsu_gfx1250_b0_to_a0.so.0.3.0"
    translator_bytes: int = Field(default=8002216, ge=0)
    # The translation store and its entry count.
    store: str = "share/rocjitsu/translations/gfx1250-b0-a0/v1"
    store_entries: int = Field(default=1976, ge=0)
    # The image's own (wrong) copy, named in the diagnosis when seen: hook, translator, store.
    image_copy_bytes: list[int] = Field(default_factory=lambda: [143217, 7531385, 170])
    # HOTSWAP values that switch translation off ("HOTSWAP=0 is not a fallback on A0").
    hotswap_off: list[str] = Field(default_factory=lambda: ["0"])

    def root(self) -> str:
        return (self.path or "/app/rjprefix").rstrip("/")


class PlatformExpect(Section):
    # PLAT-PARAMS: the bring-up module parameters (perf_setup menu D).
    amdgpu_params: dict[str, str] = Field(default_factory=lambda: {
        "gpu_recovery": "0", "halt_if_hws_hang": "1", "mtype_local": "0", "noretry": "1"})
    # PLAT-IFOE: the UALink-over-Ethernet module that must be loaded before amdgpu.
    ifoe_module: str = "ifoe"

    # PLAT-TUNED: where perf_setup writes its reports (the newest one is read).
    perf_report_glob: str = "/opt/amd-apps/perf_setup_BPC21_report_*.log"
    # A report must be at least this much newer than `uptime -s` (clock granularity).
    perf_report_slack_s: float = Field(default=0.0, ge=0)
    # Parameters whose value -1 after a "mode D" report means amdgpu was already loaded when
    # perf_setup ran (its modprobe was a no-op).
    perf_mode_d_params: list[str] = Field(default_factory=lambda: ["mtype_local", "noretry"])

    # PLAT-GPUS: HBM per GPU in GiB (288 or 432 boards); None = only require all equal.
    hbm_gib: float | None = None
    # Two HBM sizes closer than this are the same board (amd-smi rounds to MB).
    hbm_tolerance_gib: float = Field(default=1.0, ge=0)

    # PLAT-RAS: the most retired (bad) VRAM pages a GPU may carry. None: the driver's typical
    # threshold, one page per 100 MiB of VRAM (amdgpu_ras.c RAS_BAD_PAGE_COVER) of hbm_gib.
    ras_bad_pages_max: int | None = Field(default=None, ge=0)
    # FAB-ERRORS / SRV-HW-ERRORS: how many PCIe AER errors, replays and xGMI/WAFL errors one GPU may
    # add during one stage (0: any rise is a finding).
    ras_link_errors_max_rise: int = Field(default=0, ge=0)
    # ...and how many correctable ECC errors (None: recorded as facts for -m regression, never judged).
    ras_ce_max_rise: int | None = Field(default=None, ge=0)

    # SRV-THROTTLE: the largest share of a serving stage one GPU may spend throttled on any one
    # violation type (PPT power, socket/HBM/VR thermal, PROCHOT), from amd-smi's accumulators.
    # amdsmi documents any activity above 0% as a violation; 5% is the suite's allowance for a
    # power cap brushed at the peaks, not AMD's.
    throttle_max_share: float = Field(default=0.05, ge=0, le=1)

    # PLAT-FREE: containers besides rack.container that are ours (never foreign).
    own_containers: list[str] = Field(default_factory=list)
    # The docker events window for recent creates (`docker events --since`).
    free_events_since: str = "30m"

    # PLAT-WEDGED: how long a suspicious kfd entry or D-state kworker must persist to count
    # (a transient D state or a draining kfd list is not a wedge).
    wedge_settle_s: float = Field(default=10.0, ge=0)
    # comm patterns of engine processes (ATOM titles its workers ATOM::DP<r>TP<t>).
    engine_comm: list[str] = Field(default_factory=lambda: [r"^ATOM::", r"^python3?(\.\d+)?$", r"^pt_main_thread$"])
    # PLAT-DMESG: regexes of kernel lines to ignore (known-benign on this rack; default none).
    dmesg_ignore: list[str] = Field(default_factory=list)
    # PLAT-DMESG, FAB-ERRORS, SRV-HW-ERRORS: correctable PCIe AER errors (RxErr, BadTLP, BadDLLP,
    # replay timer timeouts...) one GPU may take per minute before they are a storm. Below it they
    # are counted and charged to the GPU (and stage), never a finding. The kernel itself logs at
    # most 10 per 5 s per device (aer.c's ratelimit, DEFAULT_RATELIMIT_BURST over
    # DEFAULT_RATELIMIT_INTERVAL: 120 a minute), so a log count saturates there; 10 a minute is the
    # suite's allowance (a link retraining now and then), not the kernel's or AMD's.
    aer_storm_per_min: float = Field(default=10.0, gt=0)

    # PLAT-SHM: shared-memory segments a crashed run leaves behind.
    shm_globs: list[str] = Field(default_factory=lambda: ["/dev/shm/psm_*", "/dev/shm/nccl-*"])

    # PLAT-CONTAINER: network mode and host devices the container needs.
    network_mode: str = "host"
    devices: list[str] = Field(default_factory=lambda: ["/dev/kfd", "/dev/dri"])

    # PLAT-PATCH-SIZE: byte sizes of the PR #2380 files, relative to atom_path (image ep8).
    patch_files: dict[str, int] = Field(default_factory=lambda: {
        "atom/model_ops/mla_unfused_gather.py": 7499,
        "atom/utils/envs.py": 47967,
        "atom/model_ops/attention_mla.py": 146235})
    # ... and `grep -c <pattern> <file>` must print this count.
    patch_grep_file: str = "atom/model_ops/attention_mla.py"
    patch_grep_pattern: str = "use_unfused_gather_kv_b_proj"
    patch_grep_count: int = Field(default=3, ge=0)
    # PLAT-PATCH-ENVS: the env var the patched envs.py must know, and the container's python.
    patch_env_var: str = "ATOM_UNFUSED_GATHER_KV_B_PROJ"
    container_python: str = "python3"

    # PLAT-PREFIX (A0, or when prefix.path is set).
    prefix: PrefixExpect = Field(default_factory=PrefixExpect)

    # PLAT-TOOLS: executables that must exist in the container.
    container_tools: list[str] = Field(default_factory=lambda: ["py-spy"])
