"""The GPUs' hardware error counters (state: Gpu.ras, rackgate/sim/state.py Ras; files:
rackgate/sim/rasfiles.py). A healthy GPU shows a few correctable errors -- HBM corrects a bit now
and then, and the fabric stage adds one more on GPU 0 of every node it runs on -- and nothing
uncorrectable, no retired page, no PCIe error beyond a handful of correctable ones."""
from __future__ import annotations

from pathlib import Path

from .. import rasfiles
from ..render import node_root
from ..state import Node, Rack, Ras

# Blocks an MI-class board registers (amdgpu ras block names), UMC with its deferred count.
BLOCKS = ("umc", "sdma", "gfx", "mmhub", "xgmi_wafl")
FEATURES = 0x3fbb  # ras/features: the mask of enabled RAS blocks, as the driver prints it


def healthy(state: Rack, gpus: int) -> None:
    for n in state.nodes.values():
        for g in n.gpus:
            blocks = {b: [0, 0] for b in BLOCKS}
            blocks["umc"] = [0, 2 + g.card, 0]
            g.ras = Ras(blocks=blocks, features=FEATURES,
                        aer={"aer_dev_correctable": {"BadTLP": 1}}, replay=1,
                        noise="fabric" if g.card == 0 else "")


def render(rack_dir: Path, name: str, node: Node) -> None:
    if "amdgpu" not in node.modules:
        return
    root = node_root(rack_dir, name)
    plain = node.to_json()
    for g in plain["gpus"]:
        rasfiles.write(root, plain, g)
