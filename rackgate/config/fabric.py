"""Expectations for the FAB rows (the fabric between nodes)."""
from typing import Literal, get_args

from pydantic import Field

from .base import Section

DataOp = Literal["all_reduce", "all_gather", "reduce_scatter", "dispatch", "combine"]  # FAB-DATACHECK


class FabricExpect(Section):
    # FAB-STATE: the amdgpu ualink accel_state names are unconfigured, configured (ppod_/vpod_
    # configured on some drivers), ready, active, error. These count as trained (firmware says
    # active where older docs say ready; upper case as some tools print them) ...
    active_states: list[str] = Field(default_factory=lambda: ["active", "ready", "ACTIVE", "READY"])
    # ... and these fail at once, without the training wait.
    error_states: list[str] = Field(default_factory=lambda: ["error", "ERROR"])
    # FAB-STATE: how long training may take before 'unconfigured' means stuck, and the poll step.
    state_wait_s: float = Field(default=60.0, gt=0)
    state_poll_s: float = Field(default=2.0, gt=0)

    # --- ubench07 (FAB-P2P, FAB-BW, FAB-LEFTOVER, FAB-DMESG) -------------------------------------
    # Folder on the nodes holding ualoe_p2p.exe and ualoe_bw.exe (AMD-internal; built with
    # ./rebuild.sh gfx1250). Empty: the executables are found on the node's PATH.
    ubench_dir: str = "/root/ubench-20260712/07_ualoe/build"
    # Ports for the exporter/listener side (the runbook's 55559 and 55560).
    p2p_port: int = Field(default=55559, ge=1, le=65535)
    bw_port: int = Field(default=55560, ge=1, le=65535)
    # -gpu=G for both sides; None omits -gpu: every local GPU, paired by index, aggregate result.
    ubench_gpu: int | None = None
    # The exporter/listener must say it is ready within this; then the whole pair within run_s.
    # A fabric fault makes the tools just sit: these bound the wait (a pair takes seconds).
    ubench_ready_s: float = Field(default=30.0, gt=0)
    p2p_run_s: float = Field(default=120.0, gt=0)
    bw_run_s: float = Field(default=300.0, gt=0)
    # A line of the exporter/listener output that means "waiting for the peer" (a regex).
    ubench_ready_pattern: str = r"(?i)listening|waiting|export(ed|ing)|port\s*=?\s*\d+"
    # FAB-BW: ualoe_bw's table layout is not public. When the built-in layouts (a header naming
    # read/write/bidir over numeric rows; `read 2029.4` rows or a `Read:` heading over `size GB/s`
    # rows; `Read BW (GB/s): 2029.4`) do not fit this build's output, name the figures here:
    # direction (read, write, bidir) -> a regex whose first group is GB/s; the last match counts.
    bw_patterns: dict[str, str] = Field(default_factory=dict)
    # FAB-BW: absolute floors, 4-pair aggregate GB/s (under the runbook's first table,
    # 2029 / 3192 / 3986; a later build measured 5772 / 6219 / 10942).
    bw_floor_gbps: dict[str, float] = Field(default_factory=lambda: {"read": 1800.0, "write": 2800.0,
                                                                       "bidir": 3500.0})
    # FAB-BW: each pair within this fraction of the best pair measured in the same run.
    bw_tolerance: float = Field(default=0.10, gt=0, lt=1)
    # FAB-BW: at or below this GB/s a pair is in the TCP-fallback band (~4.5 GB/s: MNNVL not in effect).
    bw_tcp_band_gbps: float = Field(default=50.0, gt=0)

    # --- collectives (FAB-COLLECTIVE, FAB-TRANSPORT) ---------------------------------------------
    # The python inside the container that holds torch (the probe runs with it, from stdin).
    container_python: str = "python3"
    # World sizes per node; the sum after all_reduce must be w(w+1)/2 on every rank.
    collective_world_sizes: list[int] = Field(default_factory=lambda: [1, 2, 4])
    # Ranks per node in the run across nodes (0: gpus_per_node).
    collective_ranks_per_node: int = Field(default=0, ge=0)
    # The process-group timeout of each world size (the runbook's 45 s); the probe ends a world
    # that outlives it by collective_grace_s.
    collective_timeout_s: float = Field(default=45.0, gt=0)
    collective_grace_s: float = Field(default=15.0, ge=0)
    # Every world, and the run across nodes: how long ranks wait for each other at the rendezvous
    # before the collective's own timeout starts (nodes start the probe at different times).
    collective_join_s: float = Field(default=120.0, gt=0)
    # Ports for the rendezvous: node i's own world w uses port+10*i+w on its data-plane address,
    # the run across nodes port-1 on the head node's.
    collective_port: int = Field(default=29800, ge=1, le=65000)
    # "auto": nccl when the container's torch sees a GPU, else gloo.
    collective_backend: str = "auto"
    # Environment of the probe: the communication settings of the launch, and NCCL_DEBUG=INFO
    # so the transport lines can be read (FAB-TRANSPORT).
    collective_env: dict[str, str] = Field(default_factory=lambda: {
        "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,P2P,NET", "NCCL_MNNVL_ENABLE": "1",
        "NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "0", "NCCL_P2P_LEVEL": "SYS", "NCCL_CUMEM_ENABLE": "1"})
    # FAB-COLLECTIVE bandwidth: in each of a node's own worlds of 2+ ranks, an all_reduce of this
    # many bytes (float32), timed over collective_bw_iters after collective_bw_warmup untimed ones;
    # algbw = bytes / mean time, busbw = algbw x 2(n-1)/n (nccl-tests' definitions). 0: not measured.
    collective_bw_bytes: int = Field(default=256 * 2**20, ge=0)
    collective_bw_warmup: int = Field(default=5, ge=1)
    collective_bw_iters: int = Field(default=20, ge=1)
    # A floor for that busbw (GB/s); 0: none (recorded as a fact and compared with the baseline).
    collective_busbw_floor_gbps: float = Field(default=0.0, ge=0)
    # --- the expert path element by element (FAB-DATACHECK, docs/fabric.md) ----------------------
    # Message sizes per rank: datacheck_min_bytes, x datacheck_size_step, up to and including
    # datacheck_max_bytes (1 GiB on a rack: the cross-node corruption of ROCm/rocm-systems#6497 was
    # seen at 1 GiB; up to 4 GiB for AllReduceWithBias-class faults).
    datacheck_min_bytes: int = Field(default=4096, ge=64)
    datacheck_max_bytes: int = Field(default=2**30, ge=64, le=2**32)
    datacheck_size_step: int = Field(default=16, ge=2)
    # Iterations of every size and collective (faults that show only after many: ROCm/mori#342).
    datacheck_iters: int = Field(default=20, ge=1)
    datacheck_ops: list[DataOp] = Field(default_factory=lambda: list(get_args(DataOp)))
    # The time budget of one pass: no iteration starts after it (rank 0's word, every rank follows).
    datacheck_budget_s: float = Field(default=600.0, gt=0)
    # Each collective's bound (the process-group timeout), then the grace before the probe ends a
    # rank that made no progress; the rendezvous' own bound (ranks of other nodes start later).
    datacheck_op_timeout_s: float = Field(default=45.0, gt=0)
    datacheck_grace_s: float = Field(default=15.0, ge=0)
    datacheck_join_s: float = Field(default=120.0, gt=0)
    # Ranks per node (0: gpus_per_node); the rendezvous port (each pass of a session the next one).
    datacheck_ranks_per_node: int = Field(default=0, ge=0)
    datacheck_port: int = Field(default=29700, ge=1, le=65000)
    # On a whole-rack pass that fails or hangs without naming its culprit: re-run on halves, node
    # and GPU pairs (at most datacheck_bisect_runs runs).
    datacheck_bisect: bool = True
    datacheck_bisect_runs: int = Field(default=16, ge=1)
    # Environment of the probe on top of collective_env.
    datacheck_env: dict[str, str] = Field(default_factory=dict)
    # FAB-TRANSPORT: transports that count as the fabric ("via <transport>" in NCCL INFO lines).
    healthy_transports: list[str] = Field(default_factory=lambda: ["P2P/CUMEMMNNVL"])
