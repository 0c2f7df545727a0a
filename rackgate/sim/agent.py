"""Stand-in for inb-node-agent: finishes UALink configuration a little after the driver loads.

Run as a real process per node: after train_s seconds every GPU that is not stuck flips from
'unconfigured' to its trained values. A stuck GPU stays 'unconfigured' forever, as on the
runbook's 12-hour boot.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from . import state as sim_state
from .render import render_node


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rack-dir", required=True)
    ap.add_argument("--node", required=True)
    a = ap.parse_args()
    rack_dir = Path(a.rack_dir)
    time.sleep(sim_state.load_rack(rack_dir).nodes[a.node].train_s)
    node = sim_state.load_rack(rack_dir).nodes[a.node]
    node.train_s = 0
    render_node(rack_dir, a.node, node)


if __name__ == "__main__":
    main()
