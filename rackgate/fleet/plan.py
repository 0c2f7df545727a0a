"""What each rack's run is: its name, its results directory and its command line."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import RackFileError, load
from ..ids import CHECKS, is_row_id

PLAN = "fleet-plan.json"
RERUN = "fleet-plan-failed-only.json"   # the tasks of a --failed-only re-run


@dataclass
class RackRun:
    name: str
    rack_file: str
    results: str                    # this rack's directory under the fleet's results
    argv: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)   # the rack's node hosts (Slurm node names where they are)

    def command(self) -> list[str]:
        r = Path(self.results)
        return [sys.executable, "-m", "rackgate.cli", f"--rack={self.rack_file}", f"--junitxml={r / 'junit.xml'}",
                f"--alluredir={r / 'allure'}", f"--verdict-file={r / 'verdict.json'}", *self.argv]


def make(rack_files: list[str], results: Path, pytest_args: list[str]) -> list[RackRun]:
    """One run per rack file; RackFileError (one line) for a bad file or two racks of one name."""
    runs: list[RackRun] = []
    for f in rack_files:
        path = Path(f).resolve()
        try:
            rack = load(path)
        except RackFileError as e:
            raise RackFileError(f"{f}: {e}") from None
        except OSError as e:
            raise RackFileError(f"{f}: {e.strerror}") from None
        if any(r.name == rack.name for r in runs):
            raise RackFileError(f"{f}: rack {rack.name!r} appears twice: give each rack file its own name")
        hosts = [n.ssh.rpartition("@")[2] or n.name for n in rack.nodes]
        runs.append(RackRun(rack.name, str(path), str((results / rack.name).resolve()), list(pytest_args), hosts))
    return runs


def save(results: Path, runs: list[RackRun], name: str = PLAN) -> Path:
    results.mkdir(parents=True, exist_ok=True)
    path = results / name
    path.write_text(json.dumps([asdict(r) for r in runs], indent=1))
    return path


def load_plan(path: Path) -> list[RackRun]:
    return [RackRun(**r) for r in json.loads(path.read_text())]


def is_test_path(a: str) -> bool:
    """Whether a pytest argument of a rack's run names tests (a re-run puts its own in its place)."""
    return not a.startswith("-") and (a.startswith(("rackgate/checks/", str(CHECKS))) or "::" in a or a.endswith(".py")
                                      or is_row_id(a))   # a row (PLAT-DRIVER) or an item of it
