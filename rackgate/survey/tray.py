"""One tray's survey: read-only, through the suite's probes and judges (never copies of them).

Each check becomes a Cell: PASS on positive evidence of health, FAIL on positive evidence of the
row's fault, UNOBSERVED when the suite could not look (the tool missing or failing, a layout not
recognised). Every verdict is the judge's in `rackgate/gates/` (the one the row's pytest item
calls: selftest/survey/test_survey_equals_items.py holds them equal); this module only reads,
calls the judge and folds per-card outcomes into a cell. An unreachable tray gets one UNOBSERVED
'reach' cell in ssh's words and no others.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from ..config import Rack
from ..config.model import Node
from ..errors import CouldNotObserve
from ..gates import fabric as fab_judge
from ..gates import plat as plat_judge
from ..gates.declare import Across, Check, declared
from ..probes import perf_setup, ualink
from ..probes.accel import expected_accel_id
from ..probes.target import On
from ..transport import Host, TransportError
from .model import FAIL, PASS, UNOBSERVED, Cell, TrayReport


def busy_ports(rack: Rack) -> list[int]:
    """Ports the bring-up will need: the server's, the DP rendezvous, ubench07's two."""
    return plat_judge.bringup_ports(rack.launch.port, rack.fabric.p2p_port, rack.fabric.bw_port)


def _cell(fn: Callable[[], tuple[str, list[str]]]) -> Cell:
    """Run one check: its findings -> FAIL, none -> PASS (with what was seen), could-not-observe
    -> UNOBSERVED with the error's own words. Unreachability propagates (the tray is out)."""
    try:
        ok_seen, bad = fn()
    except TransportError:
        raise
    except CouldNotObserve as e:
        return Cell(UNOBSERVED, str(e))
    return Cell(FAIL, "; ".join(bad)) if bad else Cell(PASS, ok_seen)


def _per_link(links: list[ualink.Link], judge: Callable[[ualink.Link], list[str]],
              gpus: dict[int, str]) -> tuple[list[str], list[str]]:
    """A per-card judge over the tray's cards, as the per-GPU pytest items run it: (findings,
    could-not-observe reasons). `gpus` (the rack map) takes each card's worst outcome."""
    bad: list[str] = []
    unseen: list[str] = []
    for li in links:
        g = li.gpu if li.gpu is not None else li.card
        try:
            found = judge(li)
        except CouldNotObserve as e:
            unseen.append(str(e))
            if gpus.get(g) != FAIL:
                gpus[g] = UNOBSERVED
            continue
        bad += [f"{li.label}: {b}" for b in found]
        gpus[g] = FAIL if found else gpus.get(g, PASS)
    return bad, unseen


def _folded(bad: list[str], unseen: list[str], ok_seen: str) -> Cell:
    """A tray's cell from its cards: any card's finding is FAIL (positive evidence on that card),
    else any card not observed is UNOBSERVED, else PASS."""
    if bad:
        return Cell(FAIL, "; ".join(bad))
    if unseen:
        return Cell(UNOBSERVED, "; ".join(unseen))
    return Cell(PASS, ok_seen)


def declared_cell(row: str, host: Host, node: Node, rack: Rack, seen: Callable[[Any], str],
                  **fixed: Any) -> tuple[str, list[str]]:
    """A row's tray cell from its declaration (gates/declare.py): the probe and the judge its pytest
    item runs, nothing wired by hand. `seen` says what a healthy tray showed; `fixed` replaces
    facts the survey pins for the whole survey (PLAT-FREE's `now`, one clock for every tray)."""
    check = declared()[row]
    got = check.probe(On(rack, host, node.name))
    if fixed:
        got = dataclasses.replace(got, **fixed)
    return seen(got), check.judge(got, rack, node.name)


def check_free(host: Host, node: Node, rack: Rack, now: float) -> tuple[str, list[str]]:
    """PLAT-FREE: no container but ours, no recent create, no foreign /dev/kfd user, no bring-up
    port already listening."""
    return declared_cell("PLAT-FREE", host, node, rack, lambda got: (
        f"{len(got.rows)} container(s), all ours; no recent create; kfd users {len(got.kfd_users)}; "
        f"ports {','.join(map(str, busy_ports(rack)))} not listening"), now=now)


def check_tuned(host: Host, node: Node, rack: Rack) -> tuple[str, list[str]]:
    """PLAT-TUNED: the perf report newer than the boot, mode D's parameters loaded."""
    def seen(got: perf_setup.Tuned) -> str:
        t = got.tuning
        return (f"{t.report.path if t.report else '?'} newer than boot {t.boot.since}"
                + (f", '{t.parsed.steps_line}'" if t.parsed and t.parsed.steps_line else ""))
    return declared_cell("PLAT-TUNED", host, node, rack, seen)


def check_params(host: Host, node: Node, rack: Rack) -> tuple[str, list[str]]:
    """PLAT-PARAMS: the amdgpu parameters the rack file names, as loaded."""
    return declared_cell("PLAT-PARAMS", host, node, rack, lambda got: " ".join(f"{k}={v}" for k, v in got.items()))


def check_gpus(host: Host, node: Node, rack: Rack) -> tuple[str, list[str]]:
    """PLAT-GPUS: amd-smi's or the driver's GPUs, the DRM cards read whole (a count off is the finding)."""
    return declared_cell("PLAT-GPUS", host, node, rack,
                         lambda got: f"{len(got.gpus.gpus)} GPUs ({got.gpus.source})")


def check_ras(host: Host, node: Node, rack: Rack) -> tuple[str, list[str]]:
    """PLAT-RAS: no uncorrectable ECC since the driver loaded, retired pages within the limit."""
    return declared_cell("PLAT-RAS", host, node, rack, lambda got: (
        f"{len(got.gpus)} GPUs' RAS counters: no uncorrectable error, "
        f"{sum(len(g.bad_pages or ()) for g in got.gpus)} retired page(s)"))


def survey_tray(host: Host, node: Node, rack: Rack, now: float | None = None) -> TrayReport:
    """node: the rack-file Node (its tray number). Raises nothing: everything lands in cells."""
    t0 = time.monotonic()
    rep = TrayReport(node.name, node.tray)
    try:
        res = host.run(["true"], timeout=max(15, rack.ssh.connect_timeout_s + 5))
        if not res.ok:
            raise TransportError(node.name, f"a trivial command failed (rc={res.rc}): {res.stderr.strip()[:200]}")
        rep.cells["reach"] = Cell(PASS, f"{host.runner.kind}")
        at = time.time() if now is None else now
        rep.cells["gpus"] = _cell(lambda: check_gpus(host, node, rack))
        rep.cells["free"] = _cell(lambda: check_free(host, node, rack, at))
        rep.cells["tuned"] = _cell(lambda: check_tuned(host, node, rack))
        rep.cells["params"] = _cell(lambda: check_params(host, node, rack))
        rep.cells["ras"] = _cell(lambda: check_ras(host, node, rack))
        _links(host, node, rack, rep)
    except TransportError as e:
        rep.cells = {"reach": Cell(UNOBSERVED, str(e))}
        rep.gpus = {g: UNOBSERVED for g in range(rack.gpus_per_node)}
    rep.seconds = time.monotonic() - t0
    return rep


def _links(host: Host, node: Node, rack: Rack, rep: TrayReport) -> None:
    """FAB-STATE, FAB-ACCEL-ID and FAB-POD (the declaration, on this tray alone) from one settled read
of its cards: FAB-POD's probe."""
    pod = declared()["FAB-POD"]
    try:
        got = pod.probe(On(rack, host, node.name))  # the settled read (probes/ualink.py settled)
    except CouldNotObserve as e:  # no card listing, or not gpus_per_node cards (PLAT-GPUS's finding)
        for k in ("links", "accel", "pod"):
            rep.cells[k] = Cell(UNOBSERVED, str(e))
        rep.gpus = {g: UNOBSERVED for g in range(rack.gpus_per_node)}
        return
    links = got.links
    rep.links = links  # kept for the rack-wide checks (duplicate accel_id) and the written rack
    state = declared()["FAB-STATE"]  # its judge on each card of the tray's one settled read
    bad, unseen = _per_link(links, lambda li: state.judge(
        dataclasses.replace(got, links=[li]), rack, li.where(node.name)), rep.gpus)
    rep.cells["links"] = _folded(bad, unseen, f"{len(links)} cards {links[0].accel_state}" if links else "")
    # accel_id of every card = gpus_per_node*(tray-1)+gpu, unique on the tray (across trays:
    # run.py's rack-wide pass), judged as the FAB-ACCEL-ID item judges it (without amd-smi)
    mine = {li.where(node.name): li for li in links}

    def accel(li: ualink.Link) -> list[str]:
        where = li.where(node.name)
        fab_judge.readable(where, li, ("accel_id_raw",))
        return fab_judge.accel_id(where, expected_accel_id(node.tray, li.gpu or 0, rack.gpus_per_node), li, None,
                                  fab_judge.same_accel_id(li, where, mine))

    bad, unseen = _per_link(links, accel, rep.gpus)
    rep.cells["accel"] = _folded(bad, unseen, " ".join(str(li.accel_id) for li in links))
    rep.cells["pod"] = _cell(lambda: _pod(pod, Across(node.name, {node.name: got}, {}), rack, rep))


def _pod(pod: Check[Any], alone: Across[ualink.Settled], rack: Rack, rep: TrayReport) -> tuple[str, list[str]]:
    """The tray's fabric domain: FAB-POD's declared judge over this tray alone (its trained cards
    agree); whether the tray's domain is the rack's is the pick's question (pick.py)."""
    found = pod.judge(alone, rack, alone.node)
    if found:
        return "", found
    trained = fab_judge.trained_domains({li.label: li for li in alone.mine.links}, rack.fabric.active_states)
    ref = fab_judge.pod_outliers(trained)[0]
    rep.domain = (ref[0] or "", ref[1] or "")
    return f"ppod={ref[0]} vpod={ref[1]}", []
