"""One tray's survey: read-only, the declared checks run on the tray (rackgate/registry `on_tray`:
the probe and the judge the row's pytest items run, never a second wiring).

Each declared row with a survey column (model.py CHECKS) becomes a Cell: PASS on positive evidence
of health, FAIL on positive evidence of the row's fault, UNOBSERVED when the suite could not look
(the tool missing or failing, a layout not recognised); a per-GPU row folds its GPUs (any GPU's
finding FAIL, else any GPU not observed UNOBSERVED) and a "rack" row is judged across this tray
alone (a "rack-gpu" row, FAB-ACCEL-ID, is judged again across every tray read: run.py).
selftest/survey/test_survey_equals_items.py holds cells and items equal. This module only words
what a healthy tray showed (SEEN), pins the survey's one clock and keeps the tray's fabric domain
for the pick. An unreachable tray gets one UNOBSERVED 'reach' cell in ssh's words and no others.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from .. import registry
from ..config import Rack
from ..config.model import Node
from ..gates import fabric as fab_judge
from ..gates import plat as plat_judge
from ..gates.declare import Across, Check
from ..probes import fabric_fields, perf_setup, ualink
from ..transport import Host, TransportError
from .model import CHECKS, FAIL, PASS, UNOBSERVED, Cell, TrayReport


def busy_ports(rack: Rack) -> list[int]:
    """Ports the bring-up will need: the server's, the DP rendezvous, ubench07's two."""
    return plat_judge.bringup_ports(rack.launch.port, rack.fabric.p2p_port, rack.fabric.bw_port)


def _tuned(got: list[perf_setup.Tuned], rack: Rack) -> str:
    t = got[0].tuning
    return (f"{t.report.path if t.report else '?'} newer than boot {t.boot.since}"
            + (f", '{t.parsed.steps_line}'" if t.parsed and t.parsed.steps_line else ""))


def _free(got: list[Any], rack: Rack) -> str:
    return (f"{len(got[0].rows)} container(s), all ours; no recent create; kfd users {len(got[0].kfd_users)}; "
            f"ports {','.join(map(str, busy_ports(rack)))} not listening")


def _ras(got: list[Any], rack: Rack) -> str:
    return (f"{len(got[0].gpus)} GPUs' RAS counters: no uncorrectable error, "
            f"{sum(len(g.bad_pages or ()) for g in got[0].gpus)} retired page(s)")


def _links(got: list[ualink.Settled], rack: Rack) -> str:
    links = [li for s in got for li in s.links]
    return f"{len(links)} cards {links[0].accel_state}" if links else ""


def _accel(got: list[Across[fabric_fields.Numbered]], rack: Rack) -> str:
    return " ".join(str(a.mine.links[a.gpu or 0].accel_id) for a in got)


def _pod(got: list[Across[ualink.Settled]], rack: Rack) -> str:
    ref = _domain(got[0], rack)
    return f"ppod={ref[0]} vpod={ref[1]}"


# What a healthy tray showed, per row, in one line (the facts every place of the tray read): the
# survey's wording only; the verdict is the declaration's.
SEEN: dict[str, Callable[[list[Any], Rack], str]] = {
    "PLAT-GPUS": lambda got, rack: f"{len(got[0].gpus.gpus)} GPUs ({got[0].gpus.source})",
    "PLAT-FREE": _free,
    "PLAT-TUNED": _tuned,
    "PLAT-PARAMS": lambda got, rack: " ".join(f"{k}={v}" for k, v in got[0].items()),
    "PLAT-RAS": _ras,
    "FAB-STATE": _links,
    "FAB-ACCEL-ID": _accel,
    "FAB-POD": _pod,
}
PINNED = {"PLAT-FREE": "now"}   # facts the survey pins for every tray: one clock (its fact `now`)


def _domain(alone: Across[ualink.Settled], rack: Rack) -> tuple[str, str]:
    """The tray's fabric domain: the (ppod_id, vpod_id) its trained cards share (FAB-POD's judge
    passed: they agree); whether it is the rack's is the pick's question (pick.py)."""
    trained = fab_judge.trained_domains({li.label: li for li in alone.mine.links}, rack.fabric.active_states)
    ref = fab_judge.pod_outliers(trained)[0]
    return ref[0] or "", ref[1] or ""


def declared_cell(c: Check[Any], places: list[registry.Place], rack: Rack, rep: TrayReport) -> Cell:
    """A declared row's cell from its declaration run on this tray (registry.on_tray). A tray that
    stops answering is out (TransportError propagates); a per-GPU row's places mark the rack map."""
    bad: list[str] = []
    unseen: list[str] = []
    for p in places:
        err = p.error or (p.judged.error if p.judged is not None else None)
        if isinstance(p.error, TransportError):
            raise p.error
        found = p.judged.findings if p.judged is not None and err is None else []
        if c.per in ("gpu", "rack-gpu"):
            bad += [f"{p.where.partition('/')[2]}: {f}" for f in found]   # gpu2 (card2, ...): the tray is the row's
        else:
            bad += found
        if err is not None:
            unseen.append(str(err))
        if p.gpu is not None:
            rep.gpus[p.gpu] = FAIL if found or rep.gpus.get(p.gpu) == FAIL else UNOBSERVED if err else rep.gpus.get(p.gpu, PASS)
    if bad:
        return Cell(FAIL, "; ".join(bad))
    if unseen:
        return Cell(UNOBSERVED, "; ".join(unseen))
    got = [p.judged.got for p in places if p.judged is not None]
    seen = SEEN.get(c.row)
    return Cell(PASS, seen(got, rack) if seen else "; ".join(s.text.splitlines()[0] for p in places if p.judged
                                                            for s in p.judged.shown[:1] if s.text))


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
        declared = registry.checks()
        ran: dict[str, list[registry.Place]] = {}
        for key, row, _ in CHECKS:
            if row in declared:
                c = declared[row]
                ran[row] = registry.on_tray(c, host, node.name, rack, {PINNED[row]: at} if row in PINNED else None)
                rep.cells[key] = declared_cell(c, ran[row], rack, rep)
                if c.per == "rack-gpu":
                    rep.places[row] = ran[row]  # judged again across every tray read (run.py)
        _fabric(ran.get("FAB-POD", []), rack, rep)
    except TransportError as e:
        rep.cells = {"reach": Cell(UNOBSERVED, str(e))}
        rep.gpus = {g: UNOBSERVED for g in range(rack.gpus_per_node)}
        rep.places = {}
    rep.seconds = time.monotonic() - t0
    return rep


def _fabric(pod: list[registry.Place], rack: Rack, rep: TrayReport) -> None:
    """The tray's fabric domain, as FAB-POD's declaration read it (one settled read), when its
    FAB-POD cell passed."""
    seen = pod[0] if pod else None
    cell = rep.cells.get("pod")
    if seen is not None and seen.judged is not None and cell is not None and cell.ok:
        rep.domain = _domain(seen.judged.got, rack)
