"""The real Debian node_exporter (textfile collector only) and Prometheus on loopback, on free ports,
for the metrics self-tests: started here, ended here by PID (TERM, then KILL past a bounded wait)."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from rackgate.transport.ports import free_port
from rackgate.transport.procs import kill_group

EXPORTER, PROMETHEUS = "prometheus-node-exporter", "prometheus"
INSTALL = "bash scripts/system_tools.sh (apt-get install prometheus prometheus-node-exporter)"


def need_binaries() -> None:
    missing = [b for b in (EXPORTER, PROMETHEUS) if shutil.which(b) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: {INSTALL}")


@contextmanager
def stack(textfile_dir: Path, work: Path) -> Iterator[str]:
    """node_exporter reading textfile_dir, Prometheus scraping it every second; yields Prometheus's URL."""
    need_binaries()
    exp_port, prom_port = free_port(), free_port()
    (work / "prom-data").mkdir(parents=True, exist_ok=True)
    cfg = work / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                   f"  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{exp_port}']\n")
    procs: list[subprocess.Popen[bytes]] = []
    logs = [open(work / "exporter.log", "wb"), open(work / "prometheus.log", "wb")]
    try:
        procs.append(subprocess.Popen([EXPORTER, f"--web.listen-address=127.0.0.1:{exp_port}", "--collector.disable-defaults",
                                       "--collector.textfile", f"--collector.textfile.directory={textfile_dir}"],
                                      stdout=logs[0], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True))
        procs.append(subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={work / 'prom-data'}",
                                       f"--web.listen-address=127.0.0.1:{prom_port}"],
                                      stdout=logs[1], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True))
        yield f"http://127.0.0.1:{prom_port}"
    finally:
        for p in procs:
            kill_group(p, grace=15)
        for f in logs:
            f.close()


def query(base: str, expr: str) -> list[dict[str, Any]] | None:
    """Prometheus's instant query result (None while it does not answer)."""
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            data = json.loads(r.read())
    except OSError:
        return None
    return data["data"]["result"] if data.get("status") == "success" else None


def wait_for(base: str, expr: str, until: Any, timeout_s: float = 180) -> list[dict[str, Any]]:
    """The query's result once `until(result)` holds; pytest.fail naming the last result past the bound."""
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        last = query(base, expr)
        if last is not None and until(last):
            return last
        time.sleep(0.5)
    pytest.fail(f"Prometheus never answered {expr!r} as expected within {timeout_s:g}s; last: {last}")
