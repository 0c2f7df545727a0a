"""Three simulated racks for the fleet self-tests: one healthy, two with different faults."""
from pathlib import Path

from ..harness import REPO

FAULTS = {"sim-a": [], "sim-b": ["params-default@node2"], "sim-c": ["gpu-wedged@node3"]}
FINDINGS = {"sim-a": set(), "sim-b": {("PLAT-PARAMS", "node2")}, "sim-c": {("PLAT-WEDGED", "node3")}}
SELECT = ["-m", "platform", "PLAT-DRIVER",
          "PLAT-IFOE", "PLAT-PARAMS",
          "PLAT-WEDGED",
          "PLAT-DMESG", "-p", "no:cacheprovider"]


def write(d: Path, names=tuple(FAULTS)) -> list[str]:
    text = (REPO / "rackgate" / "sim" / "racks" / "sim.toml").read_text().replace(
        'baseline = "sim-baseline.json"', f'baseline = "{REPO / "rackgate/sim/racks/sim-baseline.json"}"', 1)
    out = []
    for name in names:
        f = d / f"{name}.toml"
        f.write_text(text.replace('name = "sim-4x4"', f'name = "{name}"', 1)
                     .replace("faults = []", f"faults = {FAULTS[name]!r}".replace("'", '"'), 1))
        out.append(str(f))
    return out


def findings(fleet: dict) -> dict[str, set]:
    return {r["rack"]: {(f["row"], f["node"]) for f in r["findings"]} for r in fleet["racks"]}
