"""PLAT faults: one node's platform. Each one puts the row's real signature on the node: the
lines, values and files the real system shows (see rackgate/sim/areas/plat.py for the healthy
state they change)."""
import time

from ..areas.plat import STOCK_ATOM_DIR
from ..drm import upstream_port
from ..plat_content import container_id
from ..state import Plat
from . import fault

A0_LD_PATH = "LD_LIBRARY_PATH=/app/rjprefix/lib:/opt/rocm/lib:/usr/local/lib"


def _plat(state, node) -> Plat:
    return state.nodes[node].plat


def _dmesg(state, node, after_boot_s: float, lines: list[str]) -> None:
    n = state.nodes[node]
    for k, text in enumerate(lines):
        n.dmesg.append([after_boot_s + k * 0.000213, text])
    n.dmesg.sort(key=lambda e: e[0])


def _amdgpu(bdf: str, messages: tuple[str, ...]) -> list[str]:
    """Kernel lines the amdgpu driver logs for one device (dev_err/dev_info: "amdgpu <bdf>: amdgpu: ...")."""
    return [f"amdgpu {bdf}: amdgpu: {m}" for m in messages]


def _bdf(state, node, gpu: int = 0) -> str:
    return state.nodes[node].gpus[gpu].bdf or f"0000:{0x05 + 0x10 * gpu:02x}:00.0"


# --- PLAT-DRIVER / PLAT-IFOE / PLAT-PARAMS ---------------------------------------------------
@fault("driver-not-loaded", "PLAT-DRIVER", "amdgpu not loaded and no /dev/kfd (blacklisted after a reboot)",
       target="node", default="node3")
def _driver(state, node):
    n = state.nodes[node]
    n.modules = [m for m in n.modules if m not in ("amdgpu", "amdxcp", "drm_buddy", "gpu_sched")]
    n.kfd = False


@fault("ifoe-not-loaded", "PLAT-IFOE", "the ifoe (UALink-over-Ethernet) module is not loaded",
       target="node", default="node1")
def _ifoe(state, node):
    n = state.nodes[node]
    n.modules = [m for m in n.modules if m != "ifoe"]


@fault("params-default", "PLAT-PARAMS",
       "after a reboot amdgpu was loaded with a bare modprobe: default parameters (-1 0 -1 -1), and the "
       "newest perf_setup report is from before the reboot", target="node", default="node2")
def _params(state, node):
    n = state.nodes[node]
    n.params = {"gpu_recovery": "-1", "halt_if_hws_hang": "0", "mtype_local": "-1", "noretry": "-1"}
    for r in n.plat.perf_reports:
        r["at"] = n.boot_time - 86400 + 600


# --- PLAT-TUNED ------------------------------------------------------------------------------
@fault("untuned-after-reboot", "PLAT-TUNED",
       "the tray rebooted after its last perf_setup; the driver was then loaded by hand with the "
       "bring-up parameters (the newest report is older than uptime -s)", target="node", default="node4")
def _untuned(state, node):
    boot = state.nodes[node].boot_time
    _plat(state, node).perf_reports = [
        {"at": boot - 2 * 86400, "mode": "D", "passed": 8, "failed": 0, "result": "PASS", "tbp_ok": True},
        {"at": boot - 86400 + 1800, "mode": "D", "passed": 8, "failed": 0, "result": "PASS", "tbp_ok": True}]


@fault("perf-setup-after-modprobe", "PLAT-TUNED",
       "perf_setup ran with amdgpu already loaded: its report says mode D, the parameters are the defaults",
       target="node", default="node1")
def _late(state, node):
    state.nodes[node].params = {"gpu_recovery": "-1", "halt_if_hws_hang": "0",
                                      "mtype_local": "-1", "noretry": "-1"}


@fault("perf-steps-failed", "PLAT-TUNED", "perf_setup's report: 'Perf steps: 7 passed, 1 failed'",
       target="node", default="node2")
def _steps(state, node):
    r = _plat(state, node).perf_reports[-1]
    r.update(passed=7, failed=1, result="FAIL")


@fault("perf-setup-partial-tbp", "PLAT-TUNED",
       "healthy: Result [PARTIAL] because only the TBP read failed (BMC rejects the default login); must pass",
       target="node", default="node3")
def _partial(state, node):
    r = _plat(state, node).perf_reports[-1]
    r.update(result="PARTIAL", tbp_ok=False)


# --- PLAT-GPUS -------------------------------------------------------------------------------
@fault("gpu-missing", "PLAT-GPUS", "a GPU fell off the bus: the node shows 3 of its 4 GPUs",
       target="gpu", default="node2:3")
def _gpu_missing(state, node, gpu):
    del state.nodes[node].gpus[gpu]


@fault("mixed-hbm", "PLAT-GPUS", "one board with 288 GiB HBM among 432 GiB boards",
       target="gpu", default="node3:1")
def _mixed(state, node, gpu):
    state.nodes[node].gpus[gpu].hbm_gib = 288


# --- PLAT-FREE -------------------------------------------------------------------------------
@fault("rack-busy", "PLAT-FREE",
       "someone's container was created 5 minutes ago and is loading weights (GPU memory still 0%)",
       target="node", default="node2")
def _busy(state, node):
    now = time.time()
    _plat(state, node).foreign.append(
        {"name": "jdoe-dsr1-bench", "image": "rocm/vllm-dev:nightly_0915", "status": "running",
         "created": now - 300, "started": now - 299, "id": container_id(node, "jdoe-dsr1-bench"),
         "command": "python3 -m vllm.entrypoints.openai.api_server --model /models/DeepSeek-R1"})


@fault("foreign-gpu-process", "PLAT-FREE", "a process outside any container holds /dev/kfd (a bare-metal job)",
       target="node", default="node4")
def _foreign_proc(state, node):
    p = _plat(state, node)
    p.procs.append({"pid": 61234, "comm": "python3", "state": "S", "ppid": 1377,
                       "cgroup": "0::/user.slice/user-1007.slice/session-41.scope"})
    p.kfd.append(61234)


# --- PLAT-WEDGED / PLAT-DMESG ----------------------------------------------------------------
@fault("gpu-wedged", "PLAT-WEDGED",
       "a killed engine left the GPU wedged: MES stopped answering, engines <defunct>, kfd list not "
       "draining, a kworker in D", target="node", default="node3")
def _wedged(state, node):
    bdf = _bdf(state, node, 2)
    _dmesg(state, node, 2841.337201, _amdgpu(bdf, (
        "MES(0, 0) failed to respond to msg=REMOVE_QUEUE",
        "failed to remove hardware queue from MES, doorbell=0x1202",
        "MES might be in unrecoverable state, issue a GPU reset",
    )))
    p = _plat(state, node)
    own = f"0::/system.slice/docker-{p.own['id']}.scope"
    p.procs += [
        {"pid": 51207, "comm": "ATOM::DP8TP0", "state": "Z", "ppid": 51122, "cgroup": own},
        {"pid": 51208, "comm": "ATOM::DP9TP0", "state": "Z", "ppid": 51122, "cgroup": own},
        {"pid": 51122, "comm": "python3", "state": "S", "ppid": 4242, "cgroup": own},
        {"pid": 48813, "comm": "kworker/u1024:7+amdgpu-reset-dev", "state": "D", "ppid": 2, "cgroup": "0::/"},
    ]
    p.kfd += [51207, 51208]


@fault("dmesg-page-fault", "PLAT-DMESG", "a no-retry GPU page fault with its UTCL2 client in the kernel log",
       target="node", default="node1")
def _page_fault(state, node):
    bdf = _bdf(state, node, 1)
    _dmesg(state, node, 1733.908114, _amdgpu(bdf, (
        "[gfxhub] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32772)",
        " Process python3 pid 39116 thread python3 pid 39116",
        "  in page starting at address 0x00007f3a11e00000 from IH client 0x1b (UTCL2)",
        "GCVM_L2_PROTECTION_FAULT_STATUS:0x00301031",
        "\t Faulty UTCL2 client ID: TCP (0x8)",
        "\t MORE_FAULTS: 0x1",
        "\t WALKER_ERROR: 0x0",
        "\t PERMISSION_FAULTS: 0x3",
        "\t MAPPING_ERROR: 0x0",
        "\t RW: 0x0",
    )))


@fault("dmesg-ring-timeout", "PLAT-DMESG", "an SDMA ring timeout followed by a GPU reset in the kernel log",
       target="node", default="node2")
def _ring_timeout(state, node):
    bdf = _bdf(state, node, 0)
    _dmesg(state, node, 2210.004519, _amdgpu(bdf, (
        "ring sdma0 timeout, signaled seq=1201, emitted seq=1203",
        " Process information: process python3 pid 40220 thread python3 pid 40220",
        "GPU reset begin!",
        "GPU reset(1) succeeded!",
    )))


# PCIe AER, in drivers/pci/pcie/aer.c's and err.c's words: the root port above the GPU receives the
# message, the GPU logs the error with its status bits, the port reports the recovery.
def _aer(port: str, bdf: str, severity: str, layer: str, agent: str, status: str, mask: str,
         bits: tuple[str, ...]) -> list[str]:
    return [f"pcieport {port}: AER: {severity} error message received from {bdf}",
            f"amdgpu {bdf}: PCIe Bus Error: severity={severity}, type={layer}, ({agent})",
            f"amdgpu {bdf}:   device [1002:75a3] error status/mask={status}/{mask}",
            *(f"amdgpu {bdf}:    {b}" for b in bits)]


@fault("aer-gpu-uncorrectable", "PLAT-DMESG",
       "PCIe AER: an uncorrectable (non-fatal) completion timeout logged against a GPU, recovered "
       "('AER: device recovery successful'); aer_dev_nonfatal counts it", target="gpu", default="node3:2")
def _aer_uncorrectable(state, node, gpu):
    bdf, port = _bdf(state, node, gpu), upstream_port(gpu)
    _dmesg(state, node, 5012.100001, [
        *_aer(port, bdf, "Uncorrectable (Non-Fatal)", "Transaction Layer", "Requester ID", "00004000", "00000000",
              ("[14] CmpltTO                (First)",)),
        f"pcieport {port}: AER: broadcast resume message",
        f"pcieport {port}: AER: device recovery successful"])
    aer = state.nodes[node].gpus[gpu].ras.aer.setdefault("aer_dev_nonfatal", {})
    aer["CmpltTO"] = aer.get("CmpltTO", 0) + 1


@fault("aer-gpu-correctable", "PLAT-DMESG",
       "PCIe AER: three correctable receiver errors on a GPU's link over ten minutes (counted, charged to the "
       "GPU, below the storm rate): must pass", target="gpu", default="node1:0")
def _aer_correctable(state, node, gpu):
    bdf, port = _bdf(state, node, gpu), upstream_port(gpu)
    for k in range(3):
        _dmesg(state, node, 3100.0 + 300 * k, _aer(port, bdf, "Correctable", "Physical Layer", "Receiver ID",
                                                  "00000001", "00006000", ("[ 0] RxErr                 ",)))
    aer = state.nodes[node].gpus[gpu].ras.aer.setdefault("aer_dev_correctable", {})
    aer["RxErr"] = aer.get("RxErr", 0) + 3


# --- PLAT-SHM --------------------------------------------------------------------------------
@fault("stale-shm", "PLAT-SHM", "PSM and NCCL segments left in /dev/shm by a crashed run",
       target="node", default="node1")
def _shm(state, node):
    t = state.nodes[node].boot_time + 2500
    _plat(state, node).shm += [{"name": "psm_shm.7f3a2c1e-0b9d-4c55-9a0e-1d2f3c4b5a69", "size": 33554432, "mtime": t},
                                  {"name": "nccl-Qx81Vd", "size": 9637888, "mtime": t},
                                  {"name": "nccl-bG02mK", "size": 9637888, "mtime": t}]


# --- PLAT-CONTAINER --------------------------------------------------------------------------
@fault("container-stopped", "PLAT-CONTAINER",
       "our container exited (255) with the last reboot and did not come back: nothing can run in it",
       target="node", default="node2")
def _stopped(state, node):
    own = _plat(state, node).own
    own.update(status="exited", exit_code=255, finished=state.nodes[node].boot_time - 30)


@fault("container-bridge", "PLAT-CONTAINER", "our container was created without --network=host (bridge network)",
       target="node", default="node3")
def _bridge(state, node):
    _plat(state, node).own["network_mode"] = "bridge"


@fault("container-wrong-image", "PLAT-CONTAINER", "our container runs an older image than the rack file names",
       target="node", default="node4")
def _wrong_image(state, node):
    _plat(state, node).own["image"] = "rocm/fw-bringup:gfx1250-atom-20260901-ep4"


@fault("container-no-kfd", "PLAT-CONTAINER", "our container was created without --device=/dev/kfd",
       target="node", default="node1")
def _no_kfd(state, node):
    _plat(state, node).own["devices"] = ["/dev/dri"]


# --- PLAT-PATCH-SIZE / PLAT-PATCH-ENVS / PLAT-ATOM-PATH --------------------------------------
@fault("patch-truncated", "PLAT-PATCH-SIZE", "mla_unfused_gather.py is 0 bytes (docker cp interrupted by a reset)",
       target="node", default="node2")
def _truncated(state, node):
    _plat(state, node).atom["zero"].append("atom/model_ops/mla_unfused_gather.py")


@fault("patch-cp-interrupted", "PLAT-PATCH-SIZE",
       "all three patched ATOM files are 0 bytes (as seen on all four nodes after a rack power event)",
       target="node", default="node3")
def _cp_interrupted(state, node):
    _plat(state, node).atom["zero"] += ["atom/model_ops/mla_unfused_gather.py", "atom/utils/envs.py",
                                           "atom/model_ops/attention_mla.py"]


@fault("envs-unpatched", "PLAT-PATCH-ENVS",
       "the image's own envs.py (the hunk did not apply): ATOM_UNFUSED_GATHER_KV_B_PROJ is unknown",
       target="node", default="node1")
def _envs(state, node):
    a = _plat(state, node).atom
    a["patched"] = True
    a["stock_envs"] = True


@fault("atom-path-elsewhere", "PLAT-ATOM-PATH",
       "python imports a pip-installed ATOM from dist-packages; the patched tree at atom_path is not the one used",
       target="node", default="node4")
def _elsewhere(state, node):
    p = _plat(state, node)
    p.atom["elsewhere"] = True
    p.own["pythonpath"] = [STOCK_ATOM_DIR, *p.own["pythonpath"]]


# --- PLAT-PREFIX (A0) ------------------------------------------------------------------------
def _a0(state) -> None:
    """A0 silicon, with the required prefix installed correctly on every node."""
    state.rack_overrides["silicon"] = "A0"
    for n in state.nodes.values():
        p = n.plat
        p.prefix = "required"
        p.own["env"] = [e for e in p.own["env"] if not e.startswith("LD_LIBRARY_PATH=")] + [A0_LD_PATH]


@fault("a0-prefix-installed", "PLAT-PREFIX", "healthy A0 rack: the required prefix on every node (must pass)")
def _a0_ok(state):
    _a0(state)


@fault("prefix-image-copy", "PLAT-PREFIX",
       "A0 rack, one node has the image's own rocjitsu in /app/rjprefix (143217 B / 7531385 B / 170 entries)",
       target="node", default="node1")
def _image_copy(state, node):
    _a0(state)
    _plat(state, node).prefix = "image"


@fault("prefix-tools-lib-translator", "PLAT-PREFIX",
       "A0 rack, one node's container sets HSA_TOOLS_LIB to the translator (no OnLoad: HSA ignores it)",
       target="node", default="node2")
def _tools_lib(state, node):
    _a0(state)
    own = _plat(state, node).own
    own["env"].append("HSA_TOOLS_LIB=/app/rjprefix/lib/librocjitsu_gfx1250_b0_to_a0.so.0")
    # the rack file's launch env does not set it on this rack: the container's value is the one used
    state.rack_overrides["launch.env"] = {"HSA_HOTSWAP_VERBOSE": "1"}
    for other, n in state.nodes.items():
        if other != node:
            n.plat.own["env"].append("HSA_TOOLS_LIB=/app/rjprefix/lib/libhsa_hotswap_rocjitsu.so")


@fault("prefix-ld-order", "PLAT-PREFIX", "A0 rack, one node has the prefix lib after /opt/rocm/lib on LD_LIBRARY_PATH",
       target="node", default="node3")
def _ld_order(state, node):
    _a0(state)
    own = _plat(state, node).own
    own["env"] = [e for e in own["env"] if not e.startswith("LD_LIBRARY_PATH=")] + \
        ["LD_LIBRARY_PATH=/opt/rocm/lib:/usr/local/lib:/app/rjprefix/lib"]


@fault("hotswap-off", "PLAT-PREFIX", "A0 rack, one node's container runs with HOTSWAP=0 (translation off)",
       target="node", default="node4")
def _hotswap(state, node):
    _a0(state)
    _plat(state, node).own["env"].append("HOTSWAP=0")


# --- PLAT-TOOLS ------------------------------------------------------------------------------
@fault("no-py-spy", "PLAT-TOOLS", "py-spy is not installed in the container (it is not in the image)",
       target="node", default="node3")
def _no_pyspy(state, node):
    _plat(state, node).py_spy = False
