"""Hardware error counter faults (PLAT-RAS, FAB-ERRORS, SRV-HW-ERRORS): the GPUs' counters in the
kernel's formats (rackgate/sim/rasfiles.py) as a failing board shows them. A rise "during" a stage
is applied by the sim process that does that stage's work (the ubench07 stand-ins for the fabric,
the sim server's ranks for the serving load), never by the suite's snapshots."""
from ..drm import upstream_port
from . import fault

# amdgpu_ras.c RAS_BAD_PAGE_COVER: the driver's typical threshold, one retired page per 100 MiB of
# VRAM; the sim's boards carry 432 GiB.
SIM_BAD_PAGE_LIMIT = 432 * 1024 // 100


@fault("bad-pages-over-limit", "PLAT-RAS", "a GPU has retired more VRAM pages than the driver's threshold "
       "(ras/gpu_vram_bad_pages: 4424 lines '0x... : 0x00001000 : R')", target="gpu", default="node2:1")
def _bad_pages(state, node, gpu):
    state.nodes[node].gpus[gpu].ras.bad_pages = SIM_BAD_PAGE_LIMIT + 1


@fault("umc-ue-boot", "PLAT-RAS", "a GPU's HBM took an uncorrectable error before the run (ras/umc_err_count "
       "'ue: 1', one page pending retirement)", target="gpu", default="node4:3")
def _ue_boot(state, node, gpu):
    ras = state.nodes[node].gpus[gpu].ras
    ras.blocks["umc"][0] = 1
    ras.bad_pages, ras.bad_page_flag = 1, "P"


@fault("umc-ue-fabric", "FAB-ERRORS", "a GPU's HBM takes an uncorrectable error while the ubench07 rounds run "
       "(ras/umc_err_count ue 0 -> 1, a page retired)", target="gpu", default="node3:2")
def _ue_fabric(state, node, gpu):
    state.nodes[node].gpus[gpu].ras.rises += [{"stage": "fabric", "counter": "umc.ue", "by": 1},
                                              {"stage": "fabric", "counter": "bad_pages", "by": 1}]


@fault("pcie-replays", "FAB-ERRORS", "a GPU's PCIe link replays under the fabric's traffic (pcie_replay_count "
       "+37 and aer_dev_correctable Timeout +2 at every ubench07 run)", target="gpu", default="node4:0")
def _replays(state, node, gpu):
    state.nodes[node].gpus[gpu].ras.rises += [
        {"stage": "fabric", "counter": "pcie_replay_count", "by": 37, "every": True},
        {"stage": "fabric", "counter": "aer_dev_correctable.Timeout", "by": 2, "every": True}]


@fault("correctable-noise", "FAB-ERRORS", "HBM corrects a few more bits during the fabric rounds on every GPU "
       "(ras/umc_err_count ce +3 per run): correctable, healthy, recorded as facts", target="rack")
def _noise(state):
    for n in state.nodes.values():
        for g in n.gpus:
            g.ras.rises.append({"stage": "fabric", "counter": "umc.ce", "by": 3, "every": True})


@fault("umc-ue-serving", "SRV-HW-ERRORS", "a GPU's HBM takes an uncorrectable error once the server serves "
       "(ras/umc_err_count ue 0 -> 1 at the node's first forward pass)", target="gpu", default="node2:3")
def _ue_serving(state, node, gpu):
    state.nodes[node].gpus[gpu].ras.rises.append({"stage": "serving load", "counter": "umc.ue", "by": 1})


@fault("throttle-under-load", "SRV-THROTTLE", "a GPU throttles on power (PPT) a third of the time once the "
       "server serves (amd-smi metric --throttle: PPT_ACCUMULATED rising, PPT_VIOLATION_STATUS: ACTIVE)",
       target="gpu", default="node3:1")
def _throttle(state, node, gpu):
    state.nodes[node].gpus[gpu].ras.rises.append({"stage": "serving load", "counter": "throttle.ppt", "by": 33})


# The per-block counters as ACA-era firmware shows them (amdgpu_aca.c add_aca_sysfs: ras/aca_<block>,
# amdgpu_ras_aca_sysfs_read: "ue: N\nce: N\nde: N\n" for every block) instead of <block>_err_count.
@fault("ras-aca-layout", "PLAT-RAS", "a node's GPUs show their RAS counters in the ACA layout (ras/aca_umc, "
       "ras/aca_gfx ... 'ue: 0 / ce: N / de: 0'), healthy: must pass", target="node", default="node2")
def _aca(state, node):
    for g in state.nodes[node].gpus:
        g.ras.layout = "aca"


@fault("ras-aca-umc-ue", "PLAT-RAS", "ACA-layout counters on a node, one GPU's ras/aca_umc reading 'ue: 1' "
       "(an uncorrectable HBM error since the driver loaded)", target="gpu", default="node1:2")
def _aca_ue(state, node, gpu):
    _aca(state, node)
    state.nodes[node].gpus[gpu].ras.blocks["umc"][0] = 1


@fault("umc-deferred-boot", "PLAT-RAS", "a GPU's HBM took deferred (poisoned) errors before the run: "
       "ras/umc_err_count 'de: 2', ras/event_state 'Poison Creation: count:2', two pages pending retirement",
       target="gpu", default="node3:0")
def _deferred(state, node, gpu):
    ras = state.nodes[node].gpus[gpu].ras
    ras.blocks["umc"][2] = 2
    ras.events["Poison Creation"] = 2
    ras.bad_pages, ras.bad_page_flag = 2, "P"


@fault("aer-fabric-upstream", "FAB-ERRORS", "the root port above a GPU logs an uncorrectable (fatal) Surprise Down "
       "while the ubench07 rounds run (AER: Uncorrectable (Fatal) error message received from the port, [ 5] SDES): "
       "the GPU's own aer_dev_* counters stay 0, only the kernel log names it", target="gpu", default="node2:2")
def _aer_fabric(state, node, gpu):
    port = upstream_port(gpu)
    state.nodes[node].gpus[gpu].ras.rises.append({"stage": "fabric", "kmsg": [
        f"pcieport {port}: AER: Uncorrectable (Fatal) error message received from {port}",
        f"pcieport {port}: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Data Link Layer, (Receiver ID)",
        f"pcieport {port}:   device [1022:14ab] error status/mask=00000020/00000000",
        f"pcieport {port}:    [ 5] SDES                   (First)",
        f"pcieport {port}: AER: device recovery failed"]})
