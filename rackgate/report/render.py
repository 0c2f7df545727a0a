"""Render the Allure results of a run as an HTML report (Allure 3, pure Node, no Java).

    python -m rackgate.report.render                       # reports/allure-results -> reports/allure-report
    python -m rackgate.report.render RESULTS -o OUT

Allure 3 comes from npm into .tools/allure (bash scripts/report_tools.sh installs it). The report
loads its data with fetch(): open it through a web server, e.g.
`python3 -m http.server -d reports/allure-report 8080 --bind 127.0.0.1`, not as a file:// page.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..transport.procs import Overran, run_bounded
from .allure_files import CATEGORIES

REPO = Path(__file__).resolve().parents[2]
ALLURE = REPO / ".tools" / "allure" / "node_modules" / ".bin" / "allure"
RESULTS = REPO / "reports" / "allure-results"
OUT = REPO / "reports" / "allure-report"
TIMEOUT_S = 300


class RenderError(RuntimeError):
    pass


def config(name: str) -> dict[str, Any]:
    """Allure 3's config: the report name and our categories (Allure 3 reads categories from
    its config, Allure 2 from categories.json in the results)."""
    return {"name": name, "categories": CATEGORIES}


def render(results: Path = RESULTS, out: Path = OUT, name: str = "rackgate", timeout: float = TIMEOUT_S) -> Path:
    results, out = Path(results).resolve(), Path(out).resolve()
    exe = Path(os.environ.get("RACKGATE_ALLURE", ALLURE))
    if not exe.exists() and not shutil.which(str(exe)):
        raise RenderError(f"Allure 3 is not installed at {exe}: run `bash scripts/report_tools.sh`")
    if not results.is_dir() or not any(results.glob("*-result.json")):
        raise RenderError(f"no Allure results in {results}: run the suite first (it writes reports/allure-results)")
    with tempfile.TemporaryDirectory(prefix="rackgate-allure-") as d:
        rc = Path(d) / "allurerc.json"
        rc.write_text(json.dumps(config(name)))
        cmd = [str(exe), "generate", str(results), "-o", str(out), "--config", str(rc)]
        try:
            done = run_bounded(cmd, timeout, stderr=subprocess.STDOUT, cwd=d)
        except Overran:
            raise RenderError(f"allure generate did not finish within {timeout:g}s") from None
    if done.rc != 0 or not (out / "index.html").exists():
        tail = "\n".join(done.stdout.strip().splitlines()[-10:])
        raise RenderError(f"allure generate failed (rc {done.rc}):\n{tail}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rackgate.report.render", description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?", type=Path, default=RESULTS, help="Allure results (default: %(default)s)")
    ap.add_argument("-o", "--out", type=Path, default=OUT, help="report folder (default: %(default)s)")
    ap.add_argument("--name", default="rackgate", help="report title")
    a = ap.parse_args(argv)
    try:
        out = render(a.results, a.out, a.name)
    except RenderError as e:
        print(f"render: {e}", file=sys.stderr)
        return 1
    print(f"report: {out}/index.html  (view: python3 -m http.server -d {out} 8080 --bind 127.0.0.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
