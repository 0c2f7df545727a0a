"""A page as a person sees it: serve a folder on 127.0.0.1 and let headless Chromium render it
(JavaScript run, data fetched over http) and dump the resulting DOM."""
from __future__ import annotations

import functools
import html
import shutil
import subprocess
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from rackgate.transport.procs import Overran, run_bounded

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


@contextmanager
def serve(folder: Path):
    """http://127.0.0.1:<free port>/ serving folder, for the duration of the with block."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def dump_dom(url: str, budget_ms: int = 15000, timeout_s: float = 90, profile: Path | None = None) -> str:
    """The page's DOM after its scripts ran (virtual time budget), as text with entities decoded."""
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed: run `bash scripts/report_tools.sh`")
    args = [exe, *CHROMIUM_FLAGS, f"--virtual-time-budget={budget_ms}", "--dump-dom", url]
    if profile is not None:
        args.insert(1, f"--user-data-dir={profile}")
    try:
        done = run_bounded(args, timeout_s, stderr=subprocess.DEVNULL)
    except Overran:
        raise RuntimeError(f"chromium did not render {url} within {timeout_s:g}s") from None
    return html.unescape(done.stdout)
