"""A healthy real engine's golden answers between runs and under concurrent load: SRV-GOLDEN's
band as served (docs/serving.md, docs/performance.md).

    python3 benchmarks/golden_served.py [--runs 2] [--concurrency 1 8]

Starts one healthy `transformers serve` (SmolLM2-135M-Instruct, CPU, one thread: the self-tests'
engine, selftest/realengine), asks the golden prompt set (rackgate/baseline/golden_prompts.toml)
through the per-rank mechanism SRV-GOLDEN asks with (rackgate.atom.perrank, non-streamed) greedily, 32 tokens, `--runs`
times at each `--concurrency`, and counts the answers whose tokens (the text's word pieces:
transformers serve returns no logprobs) differ from the first run at the first concurrency, with
the seconds each round took. The engine is ours (stopped by its PID at the end).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rackgate.atom import fanout, perrank
from rackgate.atom.client import Client
from rackgate.baseline.golden import prompt_set
from rackgate.probes.golden import pieces
from selftest.realengine import env
from selftest.realengine.model_store import ensure_models
from selftest.realengine.server import TransformersServer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args()
    why = env.missing()
    if why:
        raise SystemExit(why)
    models = ensure_models(env.venv_bin() / "python")
    ps = prompt_set()
    asks = [fanout.Ask(t) for t in ps.prompts.values()]
    with tempfile.TemporaryDirectory() as d, \
            TransformersServer(env.venv_bin(), models.cache, models.name("healthy"), Path(d) / "serve.log") as srv:
        client = Client(srv.url, srv.model, 600)
        asker = perrank.PerRank(client, perrank.Routing({}, False), fanout.HangRule(), 600)
        first: list[tuple[str, ...]] | None = None
        print(f"{'concurrency':>11s} {'run':>4s} {'seconds':>8s} {'answers moved':>14s}")
        for conc in args.concurrency:
            for run in range(1, args.runs + 1):
                t0 = time.monotonic()
                got = [g for i in range(0, len(asks), conc)
                       for g in asker.asks(asks[i:i + conc], args.max_tokens, stream=False, extra={"logprobs": 5}).got]
                secs = time.monotonic() - t0
                bad = [g.error for g in got if g.error]
                if bad:
                    raise SystemExit(f"{len(bad)} requests failed: {bad[0]}")
                toks = [pieces(g.text) for g in got]
                first = first or toks
                moved = sum(1 for a, b in zip(first, toks) if a != b)
                print(f"{conc:11d} {run:4d} {secs:8.1f} {moved:>8d} of {len(toks)}")


if __name__ == "__main__":
    main()
