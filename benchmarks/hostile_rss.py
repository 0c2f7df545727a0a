"""Peak RSS of the suite's client against hostile endpoints (issue 52): for each behaviour of
selftest/hostile.py, one fresh process reads one answer the way the checks do (streamed and not)
and its peak resident set (ru_maxrss) and time are printed, beside a healthy answer's.

    python3 -m benchmarks.hostile_rss [--max-tokens 16] [--timeout 10]

The stand-in server runs in this process; each reader is a child (its RSS is its own)."""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from selftest.hostile import Hostile  # noqa: E402

READER = """
import json, resource, sys, time
from rackgate.atom.client import Client
url, stream, max_tokens, timeout = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), float(sys.argv[4])
c = Client(url, "hostile/model", timeout=timeout)
body = {"model": "hostile/model", "prompt": "The capital of France is", "max_tokens": max_tokens}
t0 = time.monotonic()
try:
    r = c.stream("/v1/completions", body) if stream else c.request("POST", "/v1/completions", body)
    said = f"HTTP {r.status}"
except Exception as e:
    said = f"{type(e).__name__}: {str(e)[:110]}"
print(json.dumps({"s": time.monotonic() - t0, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "said": said}))
"""
CASES = [("healthy", False), ("healthy", True), ("endless", True), ("huge", False), ("huge", True),
         ("garbage", False), ("trickle", False), ("html", False), ("error200", False), ("too-long", False)]


def _hwm_mib(pid: int) -> float:
    """A live process's peak resident set (VmHWM), MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--only", nargs="*", default=None, help="behaviour[:stream|body] to run (default: all)")
    ap.add_argument("--rss-cap-mib", type=int, default=4096, help="the readers' address space cap (a shared machine)")
    ap.add_argument("--repo", default=str(REPO), help="the checkout whose client reads (a baseline: another clone)")
    o = ap.parse_args()
    cap = o.rss_cap_mib << 20

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    print(f"max_tokens={o.max_tokens} timeout={o.timeout:g}s")
    print(f"{'behaviour':<10} {'read':<7} {'peak RSS':>9} {'seconds':>8} {'server sent':>12}  outcome")
    for behaviour, stream in CASES:
        if o.only is not None and behaviour not in o.only and f"{behaviour}:{'stream' if stream else 'body'}" not in o.only:
            continue
        with Hostile(behaviour) as h:
            t0 = time.monotonic()
            p = subprocess.Popen([sys.executable, "-c", READER, h.url, "1" if stream else "0", str(o.max_tokens),
                                  str(o.timeout)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=o.repo,
                                 env={**os.environ, "PYTHONPATH": o.repo}, preexec_fn=capped)
            bound = o.timeout * 4 + 30
            try:
                stdout, stderr = p.communicate(timeout=bound)
                late = ""
            except subprocess.TimeoutExpired:
                late = f"did not end within {bound:g}s (killed) at {_hwm_mib(p.pid):.1f} MiB peak"
                p.kill()
                stdout, stderr = p.communicate()
            wall = time.monotonic() - t0
            sent = h.sent
        out = stdout.strip().splitlines()
        err = (stderr.strip().splitlines() or ["?"])[-1][:120]
        got = json.loads(out[-1]) if out else {"rss_mib": float("nan"), "said": late or f"the reader died: {err}"}
        print(f"{behaviour:<10} {'stream' if stream else 'body':<7} {got['rss_mib']:>6.1f} MiB {wall:>8.1f} "
              f"{sent / (1 << 20):>8.1f} MiB  {got['said']}")


if __name__ == "__main__":
    main()
