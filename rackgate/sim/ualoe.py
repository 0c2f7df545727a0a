"""The simulated ubench07 tools (ualoe_p2p.exe, ualoe_bw.exe): same command lines, same output
lines as the runbook's, real processes with real PIDs.

The two sides of a pair meet through files under <rack>/ubench/ (the sim's "wire"): the
exporter/listener writes a handle file and waits; the importer/connector finds its peer by data
IP, reads the handle, and either completes the pair (writing a done file the exporter waits
for) or fails the way the fabric fails: `[FATAL] ualoe_p2p.cpp:49 hipMemSetAccess(...) ->
invalid argument` with the importer's kernel log full of HELLO/IMPORT errors, or no output at
all (NPA-RSP timeouts in the importer's dmesg). Faults live in node["fabric"]
(rackgate/sim/areas/fab.py). Nothing here ever exits on a fabric fault by itself: the real tool
sits, so the suite's bounded wait has to end it.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from . import fabwire as fab
from . import nodeview, rasfiles

SIZES = (("1MB", 0.08), ("16MB", 0.55), ("256MB", 0.93), ("512MB", 0.97), ("1.00GB", 1.0))


def reexec_as(exe: str, module: str) -> None:
    """Become a process whose executable (argv[0]) is the real tool's name, so that
    `ps -eo pid,args` shows `.../ualoe_p2p.exe export -port=...` as for the real binary."""
    if os.environ.get("RACKGATE_SIM_UALOE") == "1":
        return
    env = {**os.environ, "RACKGATE_SIM_UALOE": "1"}
    argv0 = str(nodeview.node_dir() / "bin" / exe)
    os.execve(sys.executable, [argv0, "-S", "-m", module, *sys.argv[1:]], env)  # -S: stdlib + PYTHONPATH only


def parse_args(argv: list[str]) -> tuple[str, dict[str, str]]:
    mode = next((a for a in argv if not a.startswith("-")), "")
    opts = {}
    for a in argv:
        if a.startswith("-") and "=" in a:
            k, _, v = a.lstrip("-").partition("=")
            opts[k] = v
    return mode, opts


def sit() -> None:
    """What the real tool does on a fabric fault: nothing, forever."""
    while True:
        time.sleep(3600)


def out(line: str, err: bool = False) -> None:
    print(line, file=sys.stderr if err else sys.stdout, flush=True)


class Ctx:
    def __init__(self, tool: str, argv: list[str]):
        self.tool = tool
        self.mode, self.opts = parse_args(argv)
        self.name, self.node, self.state = nodeview.this_node()
        self.rack_dir = nodeview.node_dir().parent
        self.port = self.opts.get("port", "55552")
        g = self.opts.get("gpu")
        self.gpus = [int(g)] if g is not None else [x["card"] for x in self.node["gpus"]]
        self.dir = fab.ubench_dir(self.rack_dir)

    def handle(self, node: str) -> Path:
        return self.dir / f"{node}-{self.tool}-{self.port}.handle"

    def done(self, node: str) -> Path:
        return self.dir / f"{node}-{self.tool}-{self.port}.done"

    def fabric(self, node: str) -> dict:
        return self.state["nodes"][node]["fabric"]

    def log(self, lines: list[str], card: int = 0) -> None:
        pre = fab.amdgpu_prefix(self.node, card)
        fab.kernel_log(self.rack_dir, self.name, [pre + ln for ln in lines])


def serve(c: Ctx, banner: str) -> int:
    """Exporter / listener: publish a handle, wait for the peer's completion (forever)."""
    hold = None
    if c.tool == "bw":
        other = fab.held(c.rack_dir, c.name)
        hold = c.dir / f"hold-{c.name}-{os.getpid()}"
        hold.write_text("")
        if other is not None:
            out(banner)
            sit()  # device memory held by a leftover listener: the round fails silently
    if os.environ.get("RACKGATE_SIM_LEFTOVER") == "1":
        out(banner)
        sit()  # a listener whose peer died: it never exits and keeps the memory
    c.done(c.name).unlink(missing_ok=True)
    fab.write_json(c.handle(c.name), {"pid": os.getpid(), "gpus": c.gpus, "node": c.name})
    out(banner)
    try:
        while not c.done(c.name).exists():
            time.sleep(0.05)
        result = json.loads(c.done(c.name).read_text())
    finally:
        c.handle(c.name).unlink(missing_ok=True)
        if hold is not None:
            hold.unlink(missing_ok=True)
    c.done(c.name).unlink(missing_ok=True)
    n = len(result["gpus"])
    if c.tool == "p2p":
        for g in result["gpus"]:
            out(f"[export] GPU {g}: peer GPU {g} imported and verified")
        out(f"RESULT OK: {n}/{n} pairs PASS")
    else:
        out(f"[listen] peer done: {n} GPU pair(s) measured (table on the connect side)")
    return 0


def connect(c: Ctx) -> int:
    """Importer / connector: find the peer by data IP, then the fabric decides."""
    ip = c.opts.get("peer_ip", "")
    peer = fab.node_by_ip(c.state, ip)
    out(f"[{c.mode}] connecting to {ip}:{c.port}")
    if peer is None:
        sit()  # nobody there: the real tool keeps trying
    while not c.handle(peer).exists():
        time.sleep(0.05)
    handle = json.loads(c.handle(peer).read_text())
    mine, theirs = c.fabric(c.name), c.fabric(peer)
    peer_ids = fab.accel_ids(c.state["nodes"][peer])
    if mine["bad_tray"] or theirs["bad_tray"]:
        lines = ["LSDMA PIO error status bits 0x8000", "LSDMA PIO failed to copy memory!"]
        for g in c.gpus:
            lines += [f"HELLO: Send failed to remote AccId:{peer_ids[g]}",
                      f"IMPORT: connection setup failed with remote AccId:{peer_ids[g]}",
                      f"IMPORT: XA import failed for handle:{0x7f3a00000000 + g * 0x1000:x}:{0x10 + g:x}"]
        c.log(lines)
        out("[FATAL] ualoe_p2p.cpp:49 hipMemSetAccess(...) -> invalid argument" if c.tool == "p2p"
            else "[FATAL] ualoe_bw.cpp:212 hipMemSetAccess(...) -> invalid argument", err=True)
        return 2
    if mine["npa_timeout"] or theirs["npa_timeout"]:
        c.log([f"IMPORT: NPA-RSP timeout from remote AccId:{peer_ids[g]}" for g in c.gpus])
        sit()
    if c.tool == "bw":
        other = fab.held(c.rack_dir, peer)
        if (other is not None and other != handle["pid"]) or fab.held(c.rack_dir, c.name) is not None:
            sit()  # a leftover listener holds device memory on one of the nodes: no table, no error
    if mine["lsdma_errors"]:
        c.log(["LSDMA PIO error status bits 0x8000", "LSDMA PIO failed to copy memory!"])
    if c.tool == "p2p":
        for g in c.gpus:
            out(f"[import] GPU {g}: remote GPU {g} handle imported, mapped, verified")
        out(f"RESULT OK: {len(c.gpus)}/{len(c.gpus)} pairs PASS")
        fab.write_json(c.done(peer), {"gpus": c.gpus})
        return 0
    base = fab.TCP_BW if (mine["tcp_fallback"] or theirs["tcp_fallback"]) else fab.HEALTHY_BW
    scale = min(mine["bw_factor"], theirs["bw_factor"]) * len(c.gpus) / len(c.node["gpus"])
    rnd = random.Random(f"{c.name}-{peer}")
    out(f"ualoe_bw: {len(c.gpus)} GPU pair(s){', aggregate' if len(c.gpus) > 1 else ''}; GB/s (decimal)")
    out(f"{'size':>9} {'read':>10} {'write':>10} {'bidir':>10}")
    for label, f in SIZES:
        v = {d: base[d] * scale * f * (1 + rnd.uniform(-0.003, 0.003)) for d in ("read", "write", "bidir")}
        out(f"{label:>9} {v['read']:10.1f} {v['write']:10.1f} {v['bidir']:10.1f}")
    fab.write_json(c.done(peer), {"gpus": c.gpus})
    return 0


def main(tool: str, exe: str, module: str) -> None:
    reexec_as(exe, module)
    rasfiles.during("fabric")  # the GPUs' error counters move while the fabric is exercised
    c = Ctx(tool, sys.argv[1:])
    servers = {"p2p": ("export", f"[export] {len(c.gpus)} GPU(s) exported as fabric handles; "
                                 f"waiting for the importer on port {c.port}"),
               "bw": ("listen", f"[listen] listening on port {c.port} ({len(c.gpus)} GPU(s)); waiting for the peer")}
    clients = {"p2p": "import", "bw": "connect"}
    if c.mode == servers[tool][0]:
        sys.exit(serve(c, servers[tool][1]))
    if c.mode == clients[tool]:
        sys.exit(connect(c))
    out(f"usage: {exe} {servers[tool][0]}|{clients[tool]} [-peer_ip=IP] [-port=N] [-gpu=X]", err=True)
    sys.exit(1)
