"""SRV-BATCH's healthy control on real engines (issue 50.6): the batch-forming balancer over two
healthy copies, run after run, with CPU burners beside it; and the seconds each run takes.

    python3 benchmarks/batch_band_engines.py [--runs 3] [--burners 2] [--max-tokens 8]

Two healthy `transformers serve` engines (SmolLM2-135M-Instruct, CPU, one thread each: two
processes, two copies) behind selftest/realengine/batch_balancer.py (one DP rank: a greedy request
whose batch holds a request setting top_k is answered by the second copy), the real-engine rack file
of selftest/realengine/test_batch_engine.py (the story prompt, buckets up to 2, no long prompt),
`pytest --rack FILE -m gate SRV-BATCH`: one run quiet, then
`--burners` busy loops (`while :; do :; done`, ended by their PIDs) and `--runs` runs. Per run: the
suite's wall seconds, the item's junit seconds, the requests each copy answered, the verdict. The
engines and burners are ours, stopped by PID at the end.
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
from selftest.realengine.batch_balancer import BatchBalancer  # noqa: E402
from selftest.realengine.model_store import ensure_models  # noqa: E402
from selftest.realengine.server import TransformersServer  # noqa: E402
from selftest.realengine.test_batch_engine import BATCH_SERVING  # noqa: E402


def run(bal: BatchBalancer, out: Path, max_tokens: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    rack = runners.rack_file(out / "rack.toml", bal.model, gpus_per_node=1,
                             serving={**BATCH_SERVING, "batch_max_tokens": max_tokens})
    before = list(bal.served)
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gate", "SRV-BATCH",
           "--rack", str(rack), "--atom-url", bal.url, "--served-model", bal.model,
           f"--junitxml={out / 'junit.xml'}", "-p", "no:cacheprovider"]
    t0 = time.monotonic()
    subprocess.run(cmd, check=False, cwd=REPO, capture_output=True, text=True, timeout=1500,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.monotonic() - t0
    item = next(o for k, o in junit.read(out / "junit.xml").items() if k.startswith("SRV-BATCH::"))
    secs = sum(float(c.get("time", 0)) for c in ET.parse(out / "junit.xml").getroot().iter("testcase")
               if c.get("classname") == "SRV-BATCH")
    return {"wall_s": round(wall, 1), "item_s": round(secs, 1), "status": item.status,
            "served": [a - b for a, b in zip(bal.served, before)], "message": item.message[:300],
            "load": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--burners", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=8)
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
                TransformersServer(env.venv_bin(), models.cache, name, tmp / "h2.log") as h2:
            print(json.dumps({"phase": "two engines started", "wall_s": round(time.monotonic() - t0, 1)}), flush=True)
            with BatchBalancer(name, (h1.url, h1.model), (h2.url, h2.model)) as bal:
                print(json.dumps({"phase": "quiet", **run(bal, tmp / "quiet", args.max_tokens)}), flush=True)
                try:
                    burners = [subprocess.Popen(["bash", "-c", "while :; do :; done"]) for _ in range(args.burners)]
                    for i in range(1, args.runs + 1):
                        print(json.dumps({"phase": f"run {i} ({args.burners} burners)",
                                          **run(bal, tmp / f"run{i}", args.max_tokens)}), flush=True)
                finally:
                    for b in burners:
                        b.kill()
                        b.wait()


if __name__ == "__main__":
    main()
