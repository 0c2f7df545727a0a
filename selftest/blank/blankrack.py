"""A blank rack: every tool on every node prints nothing and exits 0, every file is empty, and
the server answers `{}` to every request. Nothing here is evidence of health, so no check may
PASS on it (issue 10, item 9).

Nodes use the `local` transport with a sysroot (a tree of empty files at the real paths) and a
PATH whose first directory holds the blank tools; the server is a real HTTP server on loopback.
"""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GPUS = 4
# Executables the probes call by name; each one prints nothing and exits 0.
TOOLS = ("amd-smi", "rocm-smi", "lsmod", "dmesg", "docker", "ps", "uptime", "py-spy", "stat", "find", "date",
         "id", "sudo", "grep", "tail", "sed", "python3", "python", "lsof", "fuser", "ethtool", "ip", "ibv_devinfo")
UALINK = ("accel_state", "accel_id", "link_type", "ppod_id", "vpod_id", "local_accels", "station_lane_en_bitmap",
          "bandwidth", "latency")
PARAMS = ("gpu_recovery", "halt_if_hws_hang", "mtype_local", "noretry")
UBENCH = "/root/ubench/07_ualoe/build"


def _empty(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")


def build_node(root: Path) -> tuple[Path, Path]:
    """(sysroot, bin directory) of one blank node."""
    sysroot, bindir = root / "root", root / "bin"
    for card in range(GPUS):
        dev = sysroot / f"sys/class/drm/card{card}/device"
        for name in ("vendor", "uevent", "mem_info_vram_total"):
            _empty(dev / name)
        for name in UALINK:
            _empty(dev / "ualink" / name)
    for name in PARAMS:
        _empty(sysroot / f"sys/module/amdgpu/parameters/{name}")
    _empty(sysroot / "sys/module/ifoe/refcnt")
    (sysroot / "sys/class/kfd/kfd/proc").mkdir(parents=True, exist_ok=True)
    _empty(sysroot / "dev/kfd")
    _empty(sysroot / "opt/amd-apps/perf_setup_BPC21_report_blank.log")
    bindir.mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        _exe(bindir / tool)
    for exe in ("ualoe_p2p.exe", "ualoe_bw.exe"):
        _exe(sysroot / UBENCH.lstrip("/") / exe)
    return sysroot, bindir


def _exe(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)


def rack_text(tmp: Path, nodes: int = 2) -> str:
    lines = ['name = "blank"', f"gpus_per_node = {GPUS}", 'atom_path = "/app/ATOM"', "[fabric]", "state_wait_s = 1",
             f'ubench_dir = "{UBENCH}"']
    for i in range(1, nodes + 1):
        sysroot, bindir = build_node(tmp / f"bn{i}")
        lines += ["[[nodes]]", f'name = "bn{i}"', 'transport = "local"', f'data_ip = "127.0.0.{i}"', f"tray = {i}",
                  f'sysroot = "{sysroot}"', f'container_sysroot = "{sysroot}"',
                  f'env = {{ PATH = "{bindir}:$PATH" }}']
    return "\n".join(lines) + "\n"


class _Empty(BaseHTTPRequestHandler):
    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, *args):  # quiet
        pass


class EmptyServer:
    """A real HTTP server on loopback answering `{}` (200) to everything, in a thread of this process."""

    def __enter__(self) -> "EmptyServer":
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Empty)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
