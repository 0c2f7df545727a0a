"""ualoe_bw.exe (ubench07 bandwidth): listen on node A, connect on node B (rackgate.sim.ualoe)."""
from ..ualoe import main as _main

EXE = "ualoe_bw.exe"


def main() -> None:
    _main("bw", EXE, "rackgate.sim.tools.ualoe_bw")


if __name__ == "__main__":
    main()
