"""SRV-GOLDEN's noise band on real engines (issue 37.3): a healthy rack compared against its own
golden set, run after run, with CPU burners beside it; and the seconds each phase takes.

    python3 benchmarks/golden_band_engines.py [--runs 3] [--burners 2] [--max-tokens 16]

The self-tests' real-engine rack (selftest/realengine/test_golden_engine.py): three healthy
`transformers serve` engines (SmolLM2-135M-Instruct, CPU, one thread each) behind the self-tests'
balancer as three DP ranks, ATOM's data_parallel_rank hint taken, the real-engine rack file.
The golden set is recorded once (`pytest --rack FILE -m gate SRV-GOLDEN
--record-baseline`), then `--burners` busy loops start
(`while :; do :; done`, one core each, ended by their PIDs) and the same gate compares `--runs`
times. Per phase: the engines' start-up, the suite run's wall seconds and the golden item's own
seconds (its junit time), the verdict and the first lines of its message. The engines and
burners are ours, stopped by PID at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rackgate.report import junit  # noqa: E402
from selftest.realengine import env, runners  # noqa: E402
from selftest.realengine.balancer import Balancer  # noqa: E402
from selftest.realengine.model_store import ensure_models  # noqa: E402
from selftest.realengine.server import TransformersServer  # noqa: E402

GOLDEN = "SRV-GOLDEN::"  # one item per DP rank


def gate(bal: Balancer, out: Path, baseline: Path, max_tokens: int, *extra: str) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    rack = runners.rack_file(out / "rack.toml", bal.model, gpus_per_node=3,
                             serving={"golden_max_tokens": max_tokens})
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gate", "SRV-GOLDEN", "--rack",
           str(rack), "--atom-url", bal.url, "--served-model", bal.model, f"--baseline={baseline}",
           f"--junitxml={out / 'junit.xml'}", "-p", "no:cacheprovider", *extra]
    t0 = time.monotonic()
    subprocess.run(cmd, check=False, cwd=REPO, capture_output=True, text=True, timeout=1500,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.monotonic() - t0
    items = [o for k, o in junit.read(out / "junit.xml").items() if GOLDEN in k]
    item = next((o for o in items if o.status != "passed"), items[0])  # the first that did not pass, if any
    secs = sum(float(c.get("time", 0)) for c in ET.parse(out / "junit.xml").getroot().iter("testcase"))
    return {"wall_s": round(wall, 1), "item_s": round(secs, 1), "status": item.status,
            "message": item.message[:300], "load": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--burners", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=16)
    args = ap.parse_args()
    why = env.missing()
    if why:
        raise SystemExit(why)
    models = ensure_models(env.venv_bin() / "python")
    name = models.name("healthy")
    burners: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t0 = time.monotonic()
        with TransformersServer(env.venv_bin(), models.cache, name, tmp / "h1.log") as h1, \
                TransformersServer(env.venv_bin(), models.cache, name, tmp / "h2.log") as h2, \
                TransformersServer(env.venv_bin(), models.cache, name, tmp / "h3.log") as h3:
            print(json.dumps({"phase": "three engines started", "wall_s": round(time.monotonic() - t0, 1)}), flush=True)
            base = tmp / "baseline.json"
            with Balancer(name, [(h1.url, h1.model), (h2.url, h2.model), (h3.url, h3.model)]) as bal:
                print(json.dumps({"phase": "record", **gate(bal, tmp / "record", base, args.max_tokens,
                                                            "--record-baseline")}), flush=True)
                try:
                    burners = [subprocess.Popen(["bash", "-c", "while :; do :; done"]) for _ in range(args.burners)]
                    for run in range(1, args.runs + 1):
                        print(json.dumps({"phase": f"compare {run} ({args.burners} burners)",
                                          **gate(bal, tmp / f"run{run}", base, args.max_tokens)}), flush=True)
                finally:
                    for b in burners:
                        b.kill()
                        b.wait()


if __name__ == "__main__":
    main()
