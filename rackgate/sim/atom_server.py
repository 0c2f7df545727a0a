"""The simulated ATOM server's executable: `python -m rackgate.sim.atom_server <the runbook's
flags>` (the sim's launch command, rackgate/sim/launch.py). The server itself is in
rackgate/sim/engine/ (log formats, fault behaviour, ranks, HTTP routes, main)."""
from .engine.main import main

if __name__ == "__main__":
    main()
