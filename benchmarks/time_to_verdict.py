"""Time to verdict (issue 12.7): the gate against what it replaces, on the same server.

(a) `bang`: the real engine (`transformers serve`, SmolLM2 with NaN logits and '!' at id 0) --
    seconds from the server being ready to the first FAILED line of the README's gate command
    (`pytest -v -m gate --atom-url URL --served-model NAME --gsm8k-dir DIR`), against an lm-eval
    `--limit 10` run on the same server (bounded by --lm-eval-timeout; an unfinished run is
    reported as "more than" its bound).
(b) `healthy`: the sim server slowed to a time per output token (RACKGATE_SIM_TPOT_S; the
    runbook's measured TPOT is ~74 ms) -- the healthy quick gate (ACC-QUICK) against lm-eval's full
    GSM8K, both at concurrency 32, wall time and verdicts. --tpot-scale divides the TPOT: the
    reduced form (both runs scaled by the same factor) fits this machine; the ratio is what is
    compared.

(c) `partly N`: one endpoint (selftest/realengine/balancer.py, ATOM's least_requests spread)
    in front of N real engines, N-1 healthy and one broken (one broken rank group of N) --
    seconds from the engines being ready to the gate's first FAILED line (issue 22). --broken
    says how: `bang` ('!' tokens), `hung` (the balancer's backend that accepts and never answers)
    or `reasoning` (the reasoning-template engine: chat answers all reasoning) (issue 34).

Usage (from the project root):
    python3 benchmarks/time_to_verdict.py bang [--lm-eval-timeout 600]
    python3 benchmarks/time_to_verdict.py healthy [--tpot 0.074] [--tpot-scale 10] [--lm-eval-timeout 3000]
    python3 benchmarks/time_to_verdict.py partly --engines 3 [--broken bang|hung|reasoning]
Prints one JSON object per measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# The project's GSM8K copy (shared/data/gsm8k beside the checkout), or RACKGATE_GSM8K_DIR.
GSM8K = Path(os.environ.get("RACKGATE_GSM8K_DIR") or REPO.parent / "shared" / "data" / "gsm8k")


HANG = re.compile(r"(\d+) of (\d+) requests still in flight after ([\d.]+)s while (\d+) came back within ([\d.]+)s")


def gate_until_first_failed(url: str, model: str, extra: list[str], timeout: float, env: dict | None = None,
                            stop_at_first_failed: bool = True, read_on_s: float = 0.0) -> dict:
    """Run the README's gate command; seconds to its first FAILED line (and to its end); with
    read_on_s, the output is read that much longer for the failure's own line: a hang's 'k of n
    requests still in flight after X s while n-k came back within Y s' (where the time went)."""
    cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-m", "gate", "--atom-url", url,
           "--served-model", model, "--gsm8k-dir", str(GSM8K), *extra]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, start_new_session=True)
    first, first_line, lines, first_item, hang = None, "", [], None, None
    try:
        for line in p.stdout:
            lines.append(line)
            if first_item is None and "::" in line:
                first_item = time.monotonic() - t0
            hang = hang or HANG.search(line)
            if first is None and re.search(r"\bFAILED\b", line) and "::" in line:
                first, first_line = time.monotonic() - t0, line.strip()
                if stop_at_first_failed and not read_on_s:
                    break
            if first is not None and (hang or time.monotonic() - t0 > first + read_on_s):
                break
            if time.monotonic() - t0 > timeout:
                break
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 15)
        p.wait(timeout=60)
    out = {"first_failed_s": first, "first_failed_line": first_line, "total_s": time.monotonic() - t0,
           "first_item_s": first_item, "tail": "".join(lines[-6:])}
    if hang:
        k, n, after, back, within = hang.groups()
        out["hang"] = {"in_flight": int(k), "asked": int(n), "decided_after_s": float(after),
                       "slowest_back_s": float(within)}
    return out


def lm_eval(url: str, model: str, limit: int, timeout: float, concurrency: int, max_tokens: int) -> dict:
    from rackgate.config.accuracy import AccuracyExpect
    from rackgate.gsm8k import lmeval
    cfg = AccuracyExpect(gsm8k_dir=str(GSM8K), num_concurrent=concurrency, max_tokens=max_tokens)
    out = Path(tempfile.mkdtemp(prefix="rackgate-ttv-"))
    plan = lmeval.plan(cfg, url, model, out, limit)
    t0 = time.monotonic()
    try:
        run = lmeval.execute(plan, timeout)
    except lmeval.LmEvalError as e:  # not finished within the bound: reported as "more than"
        return {"seconds": time.monotonic() - t0, "finished": False, "rc": None, "strict_match": None,
                "said": str(e)[:300], "out": str(out)}
    secs = time.monotonic() - t0
    finished = run.rc == 0
    score = None
    if finished:
        try:
            score = lmeval.read_outputs(out, plan.task).strict.value
        except Exception as e:  # noqa: BLE001 - reported, not fatal to the benchmark
            score = f"unreadable: {e}"
    return {"seconds": secs, "finished": finished, "rc": run.rc, "strict_match": score, "out": str(out)}


def bang(args) -> None:
    sys.path.insert(0, str(REPO))
    from selftest.realengine import env
    from selftest.realengine.model_store import ensure_models
    from selftest.realengine.server import TransformersServer
    venv = env.venv_bin()
    models = ensure_models(venv / "python")
    logs = Path(tempfile.mkdtemp(prefix="rackgate-ttv-logs-"))
    with TransformersServer(venv, models.cache, models.name("bang"), logs / "bang.log") as srv:
        gate = gate_until_first_failed(srv.url, srv.model, [], args.gate_timeout)
        print(json.dumps({"measure": "a: ready -> first FAILED line (gate)", **gate}), flush=True)
        lm = lm_eval(srv.url, srv.model, 10, args.lm_eval_timeout, 1, 12288)
        print(json.dumps({"measure": "a: lm-eval --limit 10", **lm}), flush=True)
    ratio = (lm["seconds"] / gate["first_failed_s"]) if gate["first_failed_s"] else None
    print(json.dumps({"measure": "a: ratio lm-eval / gate", "ratio": ratio,
                      "lm_eval_finished": lm["finished"]}), flush=True)


def partly(args) -> None:
    import contextlib

    from selftest.realengine import env
    from selftest.realengine.balancer import HUNG, Balancer
    from selftest.realengine.model_store import ensure_models
    from selftest.realengine.server import TransformersServer
    venv = env.venv_bin()
    models = ensure_models(venv / "python")
    logs = Path(tempfile.mkdtemp(prefix="rackgate-ttv-logs-"))
    broken = {"bang": "bang", "reasoning": "reasoning-template", "hung": None}[args.broken]
    variants = ["healthy"] * (args.engines - 1) + ([broken] if broken else [])
    with contextlib.ExitStack() as stack:
        engines = [stack.enter_context(TransformersServer(venv, models.cache, models.name(v), logs / f"{i}-{v}.log"))
                   for i, v in enumerate(variants)]
        backends = [(e.url, e.model) for e in engines] + ([] if broken else [(HUNG, "")])
        bal = stack.enter_context(Balancer(models.name("healthy"), backends))
        gate = gate_until_first_failed(bal.url, bal.name, ["-rf"], args.gate_timeout,
                                       read_on_s=60.0 if args.broken == "hung" else 0.0)
        print(json.dumps({"measure": f"c: {args.engines} engines, 1 {args.broken}: ready -> first FAILED line (gate)",
                          "served": bal.served, **gate}), flush=True)


def healthy(args) -> None:
    from selftest.simserver import sim_server
    tpot = args.tpot / args.tpot_scale
    os.environ["RACKGATE_SIM_TPOT_S"] = str(tpot)  # the sim server inherits it
    with sim_server() as (_proc, url):
        model = "moonshotai/Kimi-K3"
        t0 = time.monotonic()
        gate = gate_until_first_failed(url, model, ["-k", "quick"], args.gate_timeout, stop_at_first_failed=False)
        quick_s = time.monotonic() - t0
        verdict = "fail" if gate["first_failed_s"] else ("pass" if " PASSED" in gate["tail"] or "1 passed" in gate["tail"]
                                                         else "other")
        print(json.dumps({"measure": "b: quick gate (ACC-QUICK, attached, 32 at most in flight)", "tpot_s": tpot,
                          "seconds": quick_s, "verdict": verdict, "tail": gate["tail"]}), flush=True)
        lm = lm_eval(url, model, 0, args.lm_eval_timeout, 32, 12288)
        print(json.dumps({"measure": "b: lm-eval full GSM8K, concurrency 32", "tpot_s": tpot, **lm}), flush=True)
    print(json.dumps({"measure": "b: ratio quick / full", "ratio": quick_s / lm["seconds"],
                      "full_finished": lm["finished"], "tpot_scale": args.tpot_scale}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", choices=["bang", "healthy", "partly"])
    ap.add_argument("--engines", type=int, default=3)
    ap.add_argument("--broken", choices=["bang", "hung", "reasoning"], default="bang")
    ap.add_argument("--lm-eval-timeout", type=float, default=600)
    ap.add_argument("--gate-timeout", type=float, default=1500)
    ap.add_argument("--tpot", type=float, default=0.074)
    ap.add_argument("--tpot-scale", type=float, default=1.0)
    args = ap.parse_args()
    {"bang": bang, "healthy": healthy, "partly": partly}[args.which](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
