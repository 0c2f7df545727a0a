"""amd-smi: dispatches to the subcommand modules of rackgate.sim.amdsmi (static, list, ...)."""
import sys

from ..amdsmi import handlers
from ..nodeview import this_node

EXE = "amd-smi"


def main() -> None:
    _, node, state = this_node()
    if "amdgpu" not in node["modules"]:
        print("ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status", file=sys.stderr)
        sys.exit(1)
    sub, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    run = handlers().get(sub)
    if run is None:
        print(f"amd-smi: subcommand {' '.join(sys.argv[1:])} is not simulated", file=sys.stderr)
        sys.exit(2)
    sys.exit(run(args, node, state))


if __name__ == "__main__":
    main()
