"""Judgments for the PLAT rows: facts in, findings (one string per thing wrong) out.

An empty list means healthy. Each finding says what was seen, with the value, so the check can
print it as its `seen:` line.
"""
from __future__ import annotations

import re
import time
from collections import Counter

from ..config.model import Rack
from ..config.platform import PrefixExpect
from ..errors import CouldNotObserve
from ..probes import atom_commit, dmesg, docker, modules, perf_setup, shm, wedge
from ..probes import container as container_probe
from ..probes import gpus as gpus_probe
from ..probes.container import Imported, PatchFiles, PatchVar, PrefixFiles
from ..probes.docker import Event, Inspect, PsRow
from ..probes.gpus import Gpu, GpuFacts
from ..probes.modules import DriverFacts
from ..probes.perf_setup import TuningFacts
from ..probes.procs import Proc
from ..probes.tcp import Listener
from . import aer as aer_gate
from .declare import Across, Check, Fact, Shown, across, declare


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


def tuned_item(got: perf_setup.Tuned, rack: Rack, where: str) -> list[str]:
    p = rack.platform
    return tuned(got.tuning, got.params, p.perf_mode_d_params, p.perf_report_slack_s, where=where)


def tuned_shown(got: perf_setup.Tuned, rack: Rack) -> list[Shown]:
    t = got.tuning
    report = f"{t.report.path} (mtime {t.report.mtime})" if t.report else "(none)"
    return [Shown("boot and newest report", f"uptime -s: {t.boot.since} ({t.boot.epoch})\nreport: {report}\n"
                  + "\n".join(f"{k}={v}" for k, v in got.params.items()) + "\n\n" + t.tail)]


declare(Check("PLAT-TUNED", "node", probe=perf_setup.tuned, judge=tuned_item, shows=tuned_shown))


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


def gpus_item(got: gpus_probe.Seen, rack: Rack, where: str) -> list[str]:
    p = rack.platform
    bad = gpus(got.gpus, rack.gpus_per_node, p.hbm_gib, p.hbm_tolerance_gib)
    found = got.cards.mismatch(rack.gpus_per_node) if got.cards is not None else None
    if found and got.gpus.source != "sysfs":  # sysfs: the same cards, already counted above
        bad.append(found)
    if not bad and got.unseen is not None:  # a finding about the GPUs counts before the unread cards
        raise got.unseen
    return bad


def gpus_shown(got: gpus_probe.Seen, rack: Rack) -> list[Shown]:
    g = got.gpus
    out = [Shown(f"GPUs ({g.source})", g.raw, "json" if g.raw.lstrip().startswith(("{", "[")) else "text")]
    if got.cards is not None:
        out.append(Shown("DRM cards (/sys/class/drm, PCI order)", "\n".join(
            [f"gpu{i}: {c.summary()}" for i, c in enumerate(got.cards.gpus)]
            + [f"not a GPU: {c.summary()}" for c in got.cards.others])))
    return out


def gpus_facts(got: gpus_probe.Seen, where: str) -> list[Fact]:
    return [Fact("platform.gpu.hbm_gib", round(g.hbm_gib, 1), "GiB", f"{where}/gpu{g.index}")
            for g in got.gpus.gpus if g.hbm_gib is not None] + [Fact("platform.gpu.count", len(got.gpus.gpus))]


declare(Check("PLAT-GPUS", "node", probe=gpus_probe.seen, judge=gpus_item, shows=gpus_shown, facts=gpus_facts))


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


def driver_item(facts: DriverFacts, rack: Rack, where: str) -> list[str]:
    return driver(facts)


def ifoe_item(facts: DriverFacts, rack: Rack, where: str) -> list[str]:
    return ifoe(facts, rack.platform.ifoe_module)


def lsmod_shown(facts: DriverFacts, rack: Rack) -> list[Shown]:
    return [Shown("lsmod", facts.lsmod_text)]


def params_item(got: dict[str, str | None], rack: Rack, where: str) -> list[str]:
    return params(got, rack.platform.amdgpu_params)


def params_shown(got: dict[str, str | None], rack: Rack) -> list[Shown]:
    return [Shown("amdgpu parameters", "\n".join(f"{k}={v}" for k, v in got.items()))]


declare(Check("PLAT-DRIVER", "node", probe=modules.loaded, judge=driver_item, shows=lsmod_shown),
        Check("PLAT-IFOE", "node", probe=modules.loaded, judge=ifoe_item, shows=lsmod_shown),
        Check("PLAT-PARAMS", "node", probe=modules.params, judge=params_item, shows=params_shown))


def free_item(got: docker.Occupancy, rack: Rack, where: str) -> list[str]:
    ports = bringup_ports(rack.launch.port, rack.fabric.p2p_port, rack.fabric.bw_port,
                          attached=bool(rack.server.attach_url))
    return (free(got.rows, got.events, got.kfd_users, {rack.container, *rack.platform.own_containers}, got.now)
            + ports_held(got.listening, ports))


def free_shown(got: docker.Occupancy, rack: Rack) -> list[Shown]:
    return [Shown("docker ps -a", got.ps_raw or "(no containers)"),
            Shown(f"docker events --since {rack.platform.free_events_since} (create)", got.events_raw or "(none)"),
            Shown("kfd process list", "\n".join(
                f"{pid}: {u[0].summary() if u[0] else 'process gone'} container={u[1] or '-'}"
                for pid, u in got.kfd_users.items()) or "(empty)"),
            Shown("listening TCP sockets (/proc/net/tcp{,6})",
                  "\n".join(f"{li.addr}:{li.port}" for li in got.listening) or "(none)")]


declare(Check("PLAT-FREE", "node", probe=docker.occupancy, judge=free_item, shows=free_shown))


# --- PLAT-WEDGED ------------------------------------------------------------------------------
# --- PLAT-WEDGED -------------------------------------------------------------------------------
def wedged(got: wedge.Wedge, rack: Rack, where: str) -> list[str]:
    """A MES hang in the kernel log; a kfd list that does not drain; kworkers stuck in D (the last
    two as still seen after platform.wedge_settle_s)."""
    seen = []
    if got.mes:
        seen.append("dmesg: " + dmesg.excerpt(got.mes, 3))
    if got.stale:
        seen.append(f"kfd list does not drain after {got.settle_s:g}s: " + ", ".join(got.stale))
    if got.dstate:
        seen.append(f"kworkers stuck in D for {got.settle_s:g}s: " + ", ".join(got.dstate))
    return seen


def wedged_shown(got: wedge.Wedge, rack: Rack) -> list[Shown]:
    return [Shown("wedge signals", "\n".join([h.line.raw for h in got.mes] + got.stale + got.dstate
                                             + [f"{z} (no kfd entry: freed)" for z in got.zombies]) or "(none)")]


declare(Check("PLAT-WEDGED", "node", probe=wedge.wedge, judge=wedged, shows=wedged_shown))


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


def container_item(got: tuple[Inspect | None, str], rack: Rack, where: str) -> list[str]:
    p = rack.platform
    return container(got[0], rack.container, rack.image, p.network_mode, p.devices)


def container_shown(got: tuple[Inspect | None, str], rack: Rack) -> list[Shown]:
    return [Shown(f"docker inspect {rack.container}", got[1], "json" if got[0] is not None else "text")]


def container_facts(got: tuple[Inspect | None, str], where: str) -> list[Fact]:
    info = got[0]
    return [] if info is None else [Fact("platform.image.tag", info.image), Fact("platform.image.id", info.image_id)]


def no_container(rack: Rack) -> str:
    return 'container = "": the engine runs on the node itself (no container to inspect)' if not rack.container else ""


declare(Check("PLAT-CONTAINER", "node", probe=docker.ours, judge=container_item, shows=container_shown,
              facts=container_facts, applies=no_container))


# --- PLAT-TOOLS -------------------------------------------------------------------------------
def tools(found: dict[str, str | None], rack: Rack, where: str) -> list[str]:
    missing = [t for t, p in found.items() if p is None]
    return [f"{', '.join(missing)} missing in container {rack.container}"] if missing else []


def tools_shown(found: dict[str, str | None], rack: Rack) -> list[Shown]:
    return [Shown("command -v (in the container)", "\n".join(f"{t}: {p or 'not found'}" for t, p in found.items()))]


declare(Check("PLAT-TOOLS", "node", probe=container_probe.tools, judge=tools, shows=tools_shown))


# --- PLAT-SHM ---------------------------------------------------------------------------------
def shm_segments(segs: list[shm.Segment], rack: Rack, where: str) -> list[str]:
    if not segs:
        return []
    more = f" (+{len(segs) - 6} more)" if len(segs) > 6 else ""
    return [f"{len(segs)} stale segment(s): " + ", ".join(f"{s.path} ({s.size} B)" for s in segs[:6]) + more]


def shm_shown(segs: list[shm.Segment], rack: Rack) -> list[Shown]:
    return [Shown("/dev/shm segments", "\n".join(f"{s.path} {s.size} B mtime {s.mtime}" for s in segs) or "(none)")]


declare(Check("PLAT-SHM", "node", probe=shm.stale, judge=shm_segments, shows=shm_shown))


# --- PLAT-DMESG -------------------------------------------------------------------------------
def kernel_log(scan: dmesg.Scan, rack: Rack, where: str) -> list[str]:
    out = []
    if scan.hits:
        kinds = sorted({n for h in scan.hits for n in h.patterns})
        out.append(f"{len(scan.hits)} line(s) [{', '.join(kinds)}]: {dmesg.excerpt(scan.hits, 4)}")
    try:
        out += aer_gate.judge(scan.aer, scan.gpus, scan.topology_error, rack, where)
    except CouldNotObserve:
        if not out:
            raise
    return out


def kernel_log_shown(scan: dmesg.Scan, rack: Rack) -> list[Shown]:
    out = [Shown("dmesg (this boot, matching lines)",
                 "\n".join(f"{h.line.raw}    <- {', '.join(h.patterns)}" for h in scan.hits)
                 or f"(none of {scan.lines} lines match)")]
    if scan.aer:
        out.append(Shown("PCIe AER records (this boot) and the GPU each is charged to",
                         aer_gate.shown(scan.aer, scan.gpus)))
    return out


declare(Check("PLAT-DMESG", "node", probe=dmesg.plat_dmesg, judge=kernel_log, shows=kernel_log_shown))


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


def patch_files(got: PatchFiles, rack: Rack, where: str) -> list[str]:
    return patch_sizes(got.got, got.want, (got.grep_path, got.count, rack.platform.patch_grep_count))


def patch_files_shown(got: PatchFiles, rack: Rack) -> list[Shown]:
    return [Shown("stat -c '%s %n' (in the container)", got.shown)]


def patch_files_facts(got: PatchFiles, where: str) -> list[Fact]:
    return [Fact("platform.patch.size_bytes", size, "B", f"{where}:{path}") for path, size in got.got.items()
            if size is not None]


declare(Check("PLAT-PATCH-SIZE", "node", probe=container_probe.patch_files, judge=patch_files,
              shows=patch_files_shown, facts=patch_files_facts))


# --- PLAT-PATCH-ENVS --------------------------------------------------------------------------
def patch_var(got: PatchVar, rack: Rack, where: str) -> list[str]:
    out = []
    if got.off.error or got.off.value != "False":
        out.append(f"without {got.var}: {got.off.summary()} (want False)")
    if got.on.error or got.on.value != "True":
        out.append(f"with {got.var}=1: {got.on.summary()} (want True)")
    return out


def patch_var_shown(got: PatchVar, rack: Rack) -> list[Shown]:
    return [Shown("without / with the env var (in the container)", got.shown)]


declare(Check("PLAT-PATCH-ENVS", "node", probe=container_probe.patch_var, judge=patch_var, shows=patch_var_shown))


# --- PLAT-ATOM-PATH ---------------------------------------------------------------------------
def imported_atom(got: Imported, rack: Rack, where: str) -> list[str]:
    root = rack.atom_path.rstrip("/") + "/"
    if got.file is None:
        return [f"import atom fails: {got.got.summary()}"]
    return [] if got.file.startswith(root) else [f"atom.__file__ = {got.file}, but the patched tree is {rack.atom_path} "
                                                 f"(atom_path)"]


def imported_atom_shown(got: Imported, rack: Rack) -> list[Shown]:
    return [Shown("atom.__file__ (in the container)", got.shown)]


declare(Check("PLAT-ATOM-PATH", "node", probe=container_probe.imported_atom, judge=imported_atom,
              shows=imported_atom_shown))


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


def prefix_item(got: PrefixFiles, rack: Rack, where: str) -> list[str]:
    return prefix(got.root, rack.platform.prefix, got.sizes, got.store, effective_env(got.base_env, rack.launch.env))


def prefix_shown(got: PrefixFiles, rack: Rack) -> list[Shown]:
    env = effective_env(got.base_env, rack.launch.env)
    return [Shown("prefix", got.shown + "\n".join(f"{k}={env.get(k, '(unset)')}"
                                                 for k in ("HSA_TOOLS_LIB", "LD_LIBRARY_PATH", "HOTSWAP")))]


def prefix_applies(rack: Rack) -> str:
    if rack.silicon != "A0" and not rack.platform.prefix.path:
        return "B0 silicon and no platform.prefix.path: the translation layer is inert on B0 (runbook Appendix B)"
    return ""


declare(Check("PLAT-PREFIX", "node", probe=container_probe.prefix, judge=prefix_item, shows=prefix_shown,
              applies=prefix_applies))



# --- PLAT-ATOM-COMMIT: the same ATOM commit on every node (a majority across the rack) -------
def commit_agrees(got: Across[tuple[str, str]], rack: Rack, where: str) -> list[str]:
    """This node's ATOM commit against the rack's majority: a node alone with its commit is the
    finding; a tie has no majority, so every node of it is. Judged over the nodes that answered."""
    mine = got.mine[0]
    top = Counter(c for c, _ in got.facts.values()).most_common()
    majority = top[0][0] if len(top) == 1 or top[0][1] > top[1][1] else None  # None: a tie, no majority
    if len(top) < 2 or majority == mine:
        return []
    others = ", ".join(f"{c} on {', '.join(n for n, g in got.facts.items() if g[0] == c)}" for c, _ in top if c != mine)
    return [f"{where}'s ATOM tree is at {mine}; the other nodes' at {others}"]


def commit_shown(got: Across[tuple[str, str]], rack: Rack) -> list[Shown]:
    return [Shown("ATOM commit (in the container)", got.mine[1])]


def commit_facts(got: Across[tuple[str, str]], where: str) -> list[Fact]:
    return [Fact("platform.atom.commit", got.mine[0])]


declare(across("PLAT-ATOM-COMMIT", probe=atom_commit.commit, judge=commit_agrees, shows=commit_shown,
               facts=commit_facts))
