"""REG faults: an image change that makes the rack slower without breaking any single check.

Each one moves a figure that the other areas' sim code produces, by less than those checks
tolerate and by more than the [regression] tolerance: only the comparison with a recorded
baseline (REG-FACTS) can see it, which is the point of `pytest -m regression`.
"""
from . import fault


@fault("slow-fabric", "REG-FACTS",
       "every node's fabric 20% slower after an image change: ubench07 GB/s stay above the floors and "
       "equal across pairs (FAB-BW passes), but drop against the baseline")
def _slow_fabric(state):
    # rackgate/sim/areas/fab.py: the sim's ualoe_bw.exe scales its table by each node's bw_factor.
    for n in state["nodes"].values():
        n["fabric"]["bw_factor"] = 0.8
