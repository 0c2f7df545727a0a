"""amd-smi: the subcommands and output shapes the probes read (extended per area)."""
import sys

from ..state import this_node

EXE = "amd-smi"


def main() -> None:
    _, node, _ = this_node()
    if "amdgpu" not in node["modules"]:
        print("ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status", file=sys.stderr)
        sys.exit(1)
    print(f"amd-smi: subcommand {' '.join(sys.argv[1:])} is not simulated", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
