"""One tray's survey: read-only, through the suite's probes and judges (never copies of them).

Each check becomes a Cell: PASS on positive evidence of health, FAIL on positive evidence of the
row's fault, UNOBSERVED when the suite could not look (the tool missing or failing, a layout not
recognised). An unreachable tray gets one UNOBSERVED 'reach' cell in ssh's words and no others.
"""
from __future__ import annotations

import time

from ..errors import CouldNotObserve
from ..gates import fabric as fab_judge
from ..gates import plat as plat_judge
from ..probes import docker, drm, modules, perf_setup, procs, ualink
from ..probes.accel import expected_accel_id
from ..transport import Host, TransportError
from . import ports as ports_probe
from .model import FAIL, PASS, UNOBSERVED, Cell, TrayReport

# The runbook's launch: --data-parallel-master-port 29500 (the DP rendezvous on the head).
DP_MASTER_PORT = 29500


def busy_ports(rack) -> list[int]:
    """Ports the bring-up will need: the server's, the DP rendezvous, ubench07's two."""
    return sorted({rack.launch.port, DP_MASTER_PORT, rack.fabric.p2p_port, rack.fabric.bw_port})


def _cell(fn) -> Cell:
    """Run one check: its findings -> FAIL, none -> PASS (with what was seen), could-not-observe
    -> UNOBSERVED with the error's own words. Unreachability propagates (the tray is out)."""
    try:
        ok_seen, bad = fn()
    except TransportError:
        raise
    except CouldNotObserve as e:
        return Cell(UNOBSERVED, str(e))
    return Cell(FAIL, "; ".join(bad)) if bad else Cell(PASS, ok_seen)


def check_free(host: Host, rack, now: float) -> tuple[str, list[str]]:
    p = rack.platform
    rows, _ = docker.ps_all(host)
    events, _ = docker.recent_creates(host, p.free_events_since)
    kfd = procs.kfd_pids(host)
    table = procs.processes(host) if kfd else {}
    cids = procs.containers_of(host, kfd) if kfd else {}
    users = {pid: (table.get(pid), cids.get(pid)) for pid in kfd}
    bad = plat_judge.free(rows, events, users, {rack.container, *p.own_containers}, now)
    listening = ports_probe.listeners(host)
    bad += ports_probe.busy(listening, busy_ports(rack))
    return (f"{len(rows)} container(s), all ours; no recent create; kfd users {len(kfd)}; "
            f"ports {','.join(map(str, busy_ports(rack)))} not listening"), bad


def check_tuned(host: Host, rack) -> tuple[str, list[str]]:
    p = rack.platform
    got = perf_setup.tuning(host, p.perf_report_glob)
    params = modules.amdgpu_params(host, tuple(p.perf_mode_d_params))
    bad = plat_judge.tuned(got, params, p.perf_mode_d_params, p.perf_report_slack_s)
    rep = got.report
    return (f"{rep.path if rep else '?'} newer than boot {got.boot.since}"
            + (f", '{got.parsed.steps_line}'" if got.parsed and got.parsed.steps_line else "")), bad


def check_params(host: Host, rack) -> tuple[str, list[str]]:
    want = rack.platform.amdgpu_params
    got = modules.amdgpu_params(host, tuple(want))
    if all(v is None for v in got.values()):
        return "", ["/sys/module/amdgpu/parameters is missing: amdgpu is not loaded"]
    bad = [f"{k}={got[k] if got[k] is not None else '(missing)'} (want {v})" for k, v in want.items() if got[k] != v]
    return " ".join(f"{k}={v}" for k, v in got.items()), ([", ".join(bad)] if bad else [])


def read_links_waiting(host: Host, rack) -> tuple[list[ualink.Link], float]:
    """The node's links, polled until every card is in an active state or the rack file's
    fabric.state_wait_s has passed (no longer: 'unconfigured' after it means stuck)."""
    f = rack.fabric
    t0 = time.monotonic()
    deadline = t0 + f.state_wait_s
    while True:
        links = ualink.read_gpu_links(host, rack.gpus_per_node)
        if all(li.accel_state in f.active_states for li in links) or time.monotonic() >= deadline:
            return links, time.monotonic() - t0
        time.sleep(min(f.state_poll_s, max(0.0, deadline - time.monotonic())))


def survey_tray(host: Host, node, rack, now: float | None = None) -> TrayReport:
    """node: the rack-file Node (its tray number). Raises nothing: everything lands in cells."""
    t0 = time.monotonic()
    rep = TrayReport(node.name, node.tray)
    try:
        res = host.run(["true"], timeout=max(15, rack.ssh.connect_timeout_s + 5))
        if not res.ok:
            raise TransportError(node.name, f"a trivial command failed (rc={res.rc}): {res.stderr.strip()[:200]}")
        rep.cells["reach"] = Cell(PASS, f"{host.runner.kind}")
        now = time.time() if now is None else now
        rep.cells["free"] = _cell(lambda: check_free(host, rack, now))
        rep.cells["tuned"] = _cell(lambda: check_tuned(host, rack))
        rep.cells["params"] = _cell(lambda: check_params(host, rack))
        _links(host, node, rack, rep)
    except TransportError as e:
        rep.cells = {"reach": Cell(UNOBSERVED, str(e))}
        rep.gpus = {g: UNOBSERVED for g in range(rack.gpus_per_node)}
    rep.seconds = time.monotonic() - t0
    return rep


def _links(host: Host, node, rack, rep: TrayReport) -> None:
    f = rack.fabric
    try:
        links, waited = read_links_waiting(host, rack)
    except drm.CardCount as e:  # the listing was read whole: the count itself is the finding
        rep.cells["links"] = Cell(FAIL, f"node {node.name}: {e.found}")
        for k in ("accel", "pod"):
            rep.cells[k] = Cell(UNOBSERVED, "which card is which GPU cannot be told (see links)")
        rep.gpus = {g: UNOBSERVED for g in range(rack.gpus_per_node)}
        return
    except CouldNotObserve as e:
        for k in ("links", "accel", "pod"):
            rep.cells[k] = Cell(UNOBSERVED, str(e))
        rep.gpus = {g: UNOBSERVED for g in range(rack.gpus_per_node)}
        return
    rep.links = links  # kept for the rack-wide checks (duplicate accel_id) and the written rack
    missing = [li for li in links if li.accel_state is None]
    stuck = [li for li in links if li.accel_state is not None and li.accel_state not in f.active_states]
    if missing and len(missing) == len(links):
        rep.cells["links"] = Cell(FAIL, "no ualink attributes under any GPU's /sys/class/drm/cardN/device/ualink: "
                                        "this amdgpu has no UALink")
    elif missing or stuck:
        bad = [f"{li.label}: no ualink/accel_state" for li in missing]
        bad += [f"{li.label}: {li.summary()}" for li in stuck]
        rep.cells["links"] = Cell(FAIL, "; ".join(bad) + f" still after {waited:.0f}s (fabric.state_wait_s "
                                                          f"{f.state_wait_s:g})")
    else:
        rep.cells["links"] = Cell(PASS, f"{len(links)} cards {links[0].accel_state}")
    active = [li for li in links if li.accel_state in f.active_states]
    for li in links:
        rep.gpus[li.gpu] = PASS if li in active else FAIL
    # accel_id of every trained GPU = gpus_per_node*(tray-1)+gpu (the judge of FAB-ACCEL-ID;
    # duplicates across trays are added by the rack-wide pass in run.py)
    bad = []
    for li in active:
        found = fab_judge.accel_id(li.where(node.name),
                                   expected_accel_id(node.tray, li.gpu, rack.gpus_per_node), li, None, [])
        bad += [f"{li.label}: {b}" for b in found]
        if found:
            rep.gpus[li.gpu] = FAIL
    if not active:
        rep.cells["accel"] = Cell(FAIL, "no trained card to read an accel_id from (see links)")
    else:
        rep.cells["accel"] = Cell(FAIL, "; ".join(bad)) if bad else \
            Cell(PASS, " ".join(str(li.accel_id) for li in active))
    doms = {(li.ppod_id, li.vpod_id) for li in active}
    if not active:
        rep.cells["pod"] = Cell(FAIL, "no trained card: the tray is in no fabric domain yet")
    elif len(doms) > 1:
        rep.cells["pod"] = Cell(FAIL, "cards disagree: " + ", ".join(
            f"{li.label} ppod={li.ppod_id} vpod={li.vpod_id}" for li in active))
    else:
        ppod, vpod = doms.pop()
        rep.domain = (ppod or "", vpod or "")
        rep.cells["pod"] = Cell(PASS, f"ppod={ppod} vpod={vpod}")
