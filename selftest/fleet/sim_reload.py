"""The sim's driver reload, for the remediation loop's self-test: `python -m selftest.fleet.sim_reload
RACK.toml NODE` takes off that node the sim faults a reload of amdgpu with the rack's module options
clears (the sim rebuilds its nodes from the rack file's [sim] faults every run, so the file is the
nodes' state) and says what it cleared and what it could not; exit 0 either way (the reload ran),
2 for bad arguments."""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

CLEARED_BY_RELOAD = {"params-default"}   # amdgpu loaded again with the rack's parameters


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not Path(argv[0]).is_file():
        print("usage: python -m selftest.fleet.sim_reload RACK.toml NODE", file=sys.stderr)
        return 2
    path, node = Path(argv[0]), argv[1]
    text = path.read_text()
    faults = tomllib.loads(text)["sim"]["faults"]
    on_node = [f for f in faults if f.partition("@")[2].partition(":")[0] == node]
    cleared = [f for f in on_node if f.partition("@")[0] in CLEARED_BY_RELOAD]
    kept = [f for f in faults if f not in cleared]
    line = "faults = [" + ", ".join(f'"{f}"' for f in kept) + "]"
    path.write_text(re.sub(r"(?m)^faults = \[[^\]]*\]", lambda _: line, text, count=1))
    print(f"amdgpu reloaded on {node}: cleared {cleared or 'nothing'}; still there: "
          f"{[f for f in on_node if f not in cleared] or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
