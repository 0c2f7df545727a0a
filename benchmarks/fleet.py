"""`rackgate fleet` wall time at 1, 3 and 8 simulated racks, on the local scheduler and on a real
Slurm (a private one-node cluster, selftest/fleet/slurm_cluster.py), against one rack's own run.

    python3 benchmarks/fleet.py [--sizes 1 3 8] [--schedulers local slurm] [--repeat 1]

Each rack is rackgate/sim/racks/sim.toml under its own name (no faults) and runs `-m platform` over
PLAT-DRIVER, PLAT-IFOE, PLAT-PARAMS, PLAT-DMESG and PLAT-WEDGED (selftest/fleet/racks.py SELECT). Prints a table;
figures go in docs/performance.md.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from selftest.fleet import racks  # noqa: E402
from selftest.fleet.slurm_cluster import cluster  # noqa: E402
from selftest.harness import user_env  # noqa: E402


def _racks(d: Path, n: int) -> list[str]:
    racks.FAULTS.update({f"sim-r{i}": [] for i in range(n)})
    return racks.write(d, [f"sim-r{i}" for i in range(n)])


def one_rack(d: Path, env: dict) -> float:
    f = _racks(d, 1)[0]
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "rackgate.cli", f"--rack={f}", f"--verdict-file={d / 'v.json'}",
                    f"--junitxml={d / 'j.xml'}", f"--alluredir={d / 'allure'}", *racks.SELECT], cwd=ROOT, env=env,
                   capture_output=True, timeout=900, check=True)
    return time.monotonic() - t


def fleet(d: Path, n: int, scheduler: str, env: dict) -> float:
    files = _racks(d, n)
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *files, "--scheduler", scheduler, "--no-render",
                        "--results", str(d / "res"), "--", *racks.SELECT], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"fleet of {n} on {scheduler} exited {p.returncode}: {p.stdout[-1500:]}{p.stderr[-1500:]}")
    return time.monotonic() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 3, 8])
    ap.add_argument("--schedulers", nargs="+", default=["local", "slurm"])
    ap.add_argument("--repeat", type=int, default=1)
    o = ap.parse_args()
    env = user_env()
    with tempfile.TemporaryDirectory() as tmp:
        base = statistics.median(one_rack(Path(tmp) / f"one{i}", env) for i in range(o.repeat)
                                 if (Path(tmp) / f"one{i}").mkdir() or True)
        print(f"one rack, plain run: {base:.1f} s")
        print("| scheduler | racks | wall s | x one rack |\n|---|---|---|---|")
        for sched in o.schedulers:
            ctx = cluster() if sched == "slurm" else None
            senv = {**env, "SLURM_CONF": ctx.__enter__()[0]["SLURM_CONF"]} if ctx else env
            try:
                for n in o.sizes:
                    ts = []
                    for i in range(o.repeat):
                        d = Path(tmp) / f"{sched}-{n}-{i}"
                        d.mkdir()
                        ts.append(fleet(d, n, sched, senv))
                    w = statistics.median(ts)
                    print(f"| {sched} | {n} | {w:.1f} | {w / base:.2f} |", flush=True)
            finally:
                if ctx:
                    ctx.__exit__(None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
