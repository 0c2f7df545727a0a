"""Judgments for the PLAT rows: facts in, findings (one string per thing wrong) out.

An empty list means healthy. Each finding says what was seen, with the value, so the check can
print it as its `seen:` line.
"""
from __future__ import annotations

import re
import time

from ..config.platform import PrefixExpect
from ..errors import CouldNotObserve
from ..probes.docker import Event, Inspect, PsRow
from ..probes.gpus import Gpu, GpuFacts
from ..probes.modules import DriverFacts
from ..probes.perf_setup import TuningFacts
from ..probes.procs import Proc
from ..probes.tcp import Listener


def _fmt_time(epoch: int | float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


# --- PLAT-TUNED -------------------------------------------------------------------------------
def tuned(facts: TuningFacts, params: dict[str, str | None], mode_d_params: list[str],
          slack_s: float = 0.0, where: str = "") -> list[str]:
    out = []
    if facts.report is None:
        # No report at all says nothing about the tuning (perf_setup may keep it elsewhere):
        # could not observe, naming the rack-file key that points at it.
        raise CouldNotObserve(f"{where + ': ' if where else ''}no perf_setup report matches platform.perf_report_glob "
                              f"(booted {facts.boot.since}): cannot tell whether the tuning was applied this boot")
    r, rep = facts.report, facts.parsed
    if r.mtime <= facts.boot.epoch + slack_s:
        out.append(f"newest report {r.path} is from {_fmt_time(r.mtime)}, older than this boot "
                   f"(uptime -s: {facts.boot.since}): the tuning of that run was lost by the reboot")
    if rep is None or rep.steps_failed is None:
        out.append(f"{r.path} has no 'Perf steps: N passed, M failed' line: perf_setup did not finish")
    elif rep.steps_failed > 0:
        out.append(f"{r.path}: '{rep.steps_line}' (result {rep.result or '?'})")
    if rep is not None and rep.mode == "D":
        untuned = {p: params.get(p) for p in mode_d_params if params.get(p) == "-1"}
        if untuned:
            vals = " ".join(f"{k}={v}" for k, v in untuned.items())
            out.append(f"report says '{rep.mode_line}' but {vals}: amdgpu was already loaded when perf_setup "
                       "ran, so its modprobe was a no-op")
    return out


# --- PLAT-GPUS --------------------------------------------------------------------------------
def gpus(facts: GpuFacts, expected: int, hbm_gib: float | None, tolerance_gib: float) -> list[str]:
    g = facts.gpus
    if not g:
        why = f": {facts.error}" if facts.error else ""
        return [f"{facts.source} sees no GPU (expected {expected}){why}"]
    out = []
    if len(g) < expected:
        out.append(f"{len(g)} GPUs, expected {expected}: {', '.join(x.summary() for x in g)}")
    elif len(g) > expected:
        out.append(f"{len(g)} GPUs, expected {expected} (gpus_per_node): {', '.join(x.summary() for x in g)}")
    unknown = [x for x in g if x.hbm_gib is None]
    if unknown:
        out.append(f"HBM size not reported for {', '.join(x.summary() for x in unknown)}")
    sized = [(x, x.hbm_gib) for x in g if x.hbm_gib is not None]
    if sized:
        groups: dict[float, list[Gpu]] = {}
        for x, size in sized:
            key = next((k for k in groups if abs(k - size) <= tolerance_gib), size)
            groups.setdefault(key, []).append(x)
        if len(groups) > 1:
            out.append("mixed HBM sizes: " + "; ".join(
                f"{k:g} GiB on {', '.join(f'gpu{x.index}' for x in xs)}" for k, xs in sorted(groups.items())))
        if hbm_gib is not None:
            off = [size for _, size in sized if abs(size - hbm_gib) > tolerance_gib]
            if off and len(groups) == 1:
                out.append(f"HBM {off[0]:g} GiB on every GPU, the rack file says "
                           f"platform.hbm_gib = {hbm_gib:g}")
    return out


# --- PLAT-FREE --------------------------------------------------------------------------------
def free(rows: list[PsRow], events: list[Event], kfd_users: dict[int, tuple[Proc | None, str | None]],
         own_names: set[str], now: float) -> list[str]:
    """rows: every container; events: recent creates; kfd_users: pid -> (process, container id)."""
    out = []
    own_ids = {r.id for r in rows if set(r.names) & own_names}
    foreign = [r for r in rows if not set(r.names) & own_names]
    active = [r for r in foreign if r.active]
    if active:
        out.append("foreign containers: " + ", ".join(r.summary() for r in active))
    creates = [e for e in events if e.name not in own_names and e.id not in own_ids]
    if creates:
        out.append("recent creates (docker events): " + ", ".join(e.summary(now) for e in creates))
    names_by_id = {r.id: r.name for r in rows}
    users = []
    for pid, (proc, cid) in sorted(kfd_users.items()):
        if proc is None or proc.zombie or cid in own_ids:
            continue  # gone or defunct: PLAT-WEDGED's finding; ours: fine
        where = f"container {names_by_id.get(cid, cid[:12])}" if cid else "the host"
        users.append(f"pid {pid} ({proc.comm}) in {where}")
    if users:
        out.append("processes holding /dev/kfd: " + ", ".join(users))
    return out


# The runbook's launch: --data-parallel-master-port 29500 (the DP rendezvous on the head).
DP_MASTER_PORT = 29500


def bringup_ports(server_port: int, p2p_port: int, bw_port: int, attached: bool = False) -> list[int]:
    """Ports the bring-up will need: the server's, the DP rendezvous, ubench07's two. Attached to
    a running server (--atom-url), the server's own two are that server's, not someone else's."""
    return sorted({p2p_port, bw_port} | (set() if attached else {server_port, DP_MASTER_PORT}))


def ports_held(found: list[Listener], ports: list[int]) -> list[str]:
    """PLAT-FREE's listeners: a port the bring-up needs is already listening."""
    hits = sorted({(li.port, f"{li.addr}:{li.port}") for li in found if li.port in ports})
    return [f"port {p} is listening ({where}): someone's server or rendezvous holds it" for p, where in hits]


# --- PLAT-DRIVER / PLAT-IFOE -----------------------------------------------------------------
def driver(facts: DriverFacts) -> list[str]:
    """amdgpu in lsmod and /dev/kfd present."""
    return [what for what, ok in (("no amdgpu line in lsmod", facts.amdgpu), ("no /dev/kfd", facts.kfd)) if not ok]


def ifoe(facts: DriverFacts, module: str) -> list[str]:
    """The UALink-over-Ethernet module (platform.ifoe_module) in lsmod."""
    if module in facts.modules:
        return []
    return [f"no {module} line in lsmod"
            + (" (amdgpu is loaded: it came up without the UALink-over-Ethernet stack)" if facts.amdgpu else "")]


# --- PLAT-PARAMS ------------------------------------------------------------------------------
def params(got: dict[str, str | None], want: dict[str, str]) -> list[str]:
    """amdgpu's module parameters (None: the file is missing) against the rack file's."""
    if all(v is None for v in got.values()):
        return ["/sys/module/amdgpu/parameters is missing: amdgpu is not loaded (see PLAT-DRIVER)"]
    bad = [f"{k}={got.get(k) if got.get(k) is not None else '(missing)'} (want {v})"
           for k, v in want.items() if got.get(k) != v]
    return [", ".join(bad)] if bad else []


# --- PLAT-WEDGED ------------------------------------------------------------------------------
def stale_kfd(kfd: list[int], procs: dict[int, Proc]) -> list[str]:
    """kfd entries whose process is a zombie or gone: the GPU context was never torn down."""
    out = []
    for pid in kfd:
        p = procs.get(pid)
        if p is None:
            out.append(f"kfd entry {pid} (process gone)")
        elif p.zombie:
            out.append(f"kfd entry {pid} held by {p.comm} <defunct>")
    return out


def d_state_kworkers(procs: dict[int, Proc]) -> list[str]:
    return [f"{p.comm} (pid {p.pid}) in D" for p in procs.values() if p.state == "D" and p.comm.startswith("kworker")]


def defunct_engines(procs: dict[int, Proc], engine_comm: list[str]) -> list[str]:
    pats = [re.compile(r) for r in engine_comm]
    return [f"{p.comm} (pid {p.pid}) <defunct>" for p in procs.values()
            if p.zombie and any(r.search(p.comm) for r in pats)]


# --- PLAT-CONTAINER ---------------------------------------------------------------------------
def container(info: Inspect | None, name: str, image: str, network_mode: str, devices: list[str]) -> list[str]:
    if info is None:
        return [f"no container named {name!r} on this node (docker inspect: No such container)"]
    out = []
    if not info.running:
        code = f" (exit code {info.exit_code})" if info.exit_code not in (None, 0) else ""
        out.append(f"container {name} is {info.status or 'not running'}{code}")
    if image and info.image != image:
        out.append(f"image {info.image!r}, expected {image!r}")
    if info.network_mode != network_mode:
        out.append(f"network mode {info.network_mode or '(unset)'!r}, expected {network_mode!r} (--network={network_mode})")
    missing = [d for d in devices if not any(h == d or h.startswith(d.rstrip("/") + "/") for h in info.devices)]
    if missing:
        out.append(f"devices {', '.join(missing)} not passed (HostConfig.Devices: {', '.join(info.devices) or 'none'})")
    return out


# --- PLAT-PATCH-SIZE --------------------------------------------------------------------------
def patch_sizes(got: dict[str, int | None], want: dict[str, int], grep: tuple[str, int | None, int]) -> list[str]:
    out = []
    for path, size in want.items():
        have = got.get(path)
        if have is None:
            out.append(f"{path} missing (want {size} B)")
        elif have == 0:
            out.append(f"{path} is 0 bytes (want {size} B): an interrupted docker cp")
        elif have != size:
            out.append(f"{path} is {have} B, want {size} B")
    path, count, want_count = grep
    if count is None and path not in want:
        out.append(f"{path} missing (grep -c {want_count} expected)")
    elif count is not None and count != want_count:
        out.append(f"grep -c in {path} prints {count}, want {want_count}")
    return out


# --- PLAT-PREFIX ------------------------------------------------------------------------------
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def effective_env(base: dict[str, str], overlay: dict[str, str]) -> dict[str, str]:
    """The environment a launch sees: the container's own (Config.Env) with the rack file's
    launch env exported on top, $VAR / ${VAR} expanded against what is set so far (as
    `export LD_LIBRARY_PATH=/app/rjprefix/lib:$LD_LIBRARY_PATH` would)."""
    env = dict(base)
    for k, v in overlay.items():
        env[k] = _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), v)
    return env


def prefix(root: str, cfg: PrefixExpect, sizes_: dict[str, int | None], store_count: int | None,
           env: dict[str, str]) -> list[str]:
    """cfg: PrefixExpect. sizes_: container path -> size."""
    out = []
    hook, translator = f"{root}/{cfg.hook}", f"{root}/{cfg.translator}"
    image_hook, image_tr, image_store = (list(cfg.image_copy_bytes) + [None, None, None])[:3]
    for path, want, image_size in ((hook, cfg.hook_bytes, image_hook), (translator, cfg.translator_bytes, image_tr)):
        have = sizes_.get(path)
        if have is None:
            out.append(f"{path} missing")
        elif have != want:
            tag = " (the image's own copy)" if have == image_size else (" (an interrupted docker cp)" if have == 0 else "")
            out.append(f"{path} is {have} B{tag}, want {want} B")
    store = f"{root}/{cfg.store}"
    if store_count is None:
        out.append(f"{store} missing")
    elif store_count != cfg.store_entries:
        tag = " (the image's own store)" if store_count == image_store else ""
        out.append(f"{store} has {store_count} entries{tag}, want {cfg.store_entries}")
    tools = env.get("HSA_TOOLS_LIB", "")
    if not tools:
        out.append("HSA_TOOLS_LIB is not set: no hook is loaded")
    elif tools.rstrip("/") != hook:
        if "librocjitsu" in tools.rsplit("/", 1)[-1]:
            out.append(f"HSA_TOOLS_LIB={tools} points at the translator: it has no OnLoad, HSA ignores it silently")
        else:
            out.append(f"HSA_TOOLS_LIB={tools}, want {hook}")
    ld = [p.rstrip("/") for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    if not ld or ld[0] != f"{root}/lib":
        out.append(f"LD_LIBRARY_PATH={env.get('LD_LIBRARY_PATH', '')!r}: {root}/lib is not first")
    hs = env.get("HOTSWAP")
    if hs is not None and hs in cfg.hotswap_off:
        out.append(f"HOTSWAP={hs}: translation switched off (not a fallback on A0)")
    return out
