"""ualoe_p2p.exe (ubench07 correctness): export on node A, import on node B (rackgate.sim.ualoe)."""
from ..ualoe import main as _main

EXE = "ualoe_p2p.exe"


def main() -> None:
    _main("p2p", EXE, "rackgate.sim.tools.ualoe_p2p")


if __name__ == "__main__":
    main()
