"""The property suite in its benchmark mode: 50,000 examples per parser (the self-tests run 500).

    python3 benchmarks/properties.py [--examples 50000] [-k NAME]

Same properties, same fixed seed (derandomize), no deadline: selftest/properties. Prints the time
per parser from pytest's --durations."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=50000)
    ap.add_argument("-k", default="", help="only the parsers whose name matches (pytest -k)")
    a = ap.parse_args()
    env = {**os.environ, "RACKGATE_PROPERTY_EXAMPLES": str(a.examples)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0", "selftest/properties"]
    if a.k:
        cmd += ["-k", a.k]
    return subprocess.call(cmd, cwd=REPO, env=env)


if __name__ == "__main__":
    sys.exit(main())
