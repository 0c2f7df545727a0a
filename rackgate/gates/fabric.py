"""Judgments of the FAB rows: facts in, findings out (an empty list is healthy).

Each function returns the `seen` text of every problem; the test turns a non-empty list into a
failure with the catalogue row's diagnosis.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from ..config.fabric import FabricExpect
from ..config.model import Rack
from ..errors import CouldNotObserve, UnrecognisedOutput, require_records
from ..probes import accel, amdsmi, collective, dmesg, fabric_fields, pair_runs, ualink, ubench
from ..probes.fabric_fields import Numbered
from ..probes.pair_runs import LeftoverScan, Measured, NodeScans, PairLogs, PairRun
from ..probes.target import BaselineView
from ..probes.ualink import Link, Settled, Trained, state_kind
from .declare import Across, Check, Fact, Shown, across, across_gpus, declare, per_pair


def readable(where: str, link: Link, attrs: tuple[str, ...]) -> Link:
    """The link, when each of `attrs` was read with a value; an empty attribute file is not a
    state, an id or a bitmap: could-not-observe naming the file."""
    for a in attrs:
        if (getattr(link, a, None) or "").strip() == "":
            raise UnrecognisedOutput(f"{where}: /sys/class/drm/card{link.card}/device/ualink/{a.removesuffix('_raw')} is "
                                     f"{'empty' if getattr(link, a, None) is not None else 'missing'}")
    return link


# --- FAB-STATE ------------------------------------------------------------------------------


def link_state(where: str, link: Link, active: Sequence[str], error: Sequence[str], wait_s: float) -> list[str]:
    """One link after the training wait (probes/ualink.py wait_settled): [] when trained; a
    finding when the driver reports it in error or still training after `wait_s`; a state the
    driver does not print (or none) is an output not recognised: could-not-observe, never 'stuck'."""
    readable(where, link, ("accel_state",))
    kind = state_kind(link.accel_state, active, error)
    if kind == "error":
        return [f"{link.summary()}: the driver reports the link in error"]
    if kind == "unknown":
        raise UnrecognisedOutput(f"{where}: ualink/accel_state is {link.accel_state!r}, not a state the amdgpu "
                                 "driver prints (unconfigured, configured, ready, active, error)")
    if kind == "training":
        return [f"{link.summary()} still after {wait_s:g}s (fabric.state_wait_s)"]
    return []


def state_item(got: Settled, rack: Rack, where: str) -> list[str]:
    """FAB-STATE for one GPU: its link after the training wait."""
    f = rack.fabric
    return link_state(where, got.links[0], f.active_states, f.error_states, f.state_wait_s)


def state_shown(got: Settled, rack: Rack) -> list[Shown]:
    return [Shown("accel_state polls", "\n".join(got.polls))]


declare(Check("FAB-STATE", "gpu", probe=ualink.settled_gpu, judge=state_item, shows=state_shown))


# --- FAB-ACCEL-ID ---------------------------------------------------------------------------


def accel_id(where: str, expected: int, link: Link, smi: amdsmi.FabricGpu | None,
             same_id_elsewhere: list[str], smi_read: bool = False) -> list[str]:
    """The driver's accel_id is the evidence; amd-smi's ACCELERATOR_ID must agree with it. With
    `smi_read` (the test read amd-smi fabric), an amd-smi value the suite could not read (GPU not
    listed, N/A) is could-not-observe -- unless the driver already shows the fault."""
    out = []
    if link.accel_id is None:
        out.append(f"ualink/accel_id={link.accel_id_raw} (unset), expected {expected} = 4*(tray-1)+gpu")
    elif link.accel_id != expected:
        out.append(f"ualink/accel_id={link.accel_id}, expected {expected} = 4*(tray-1)+gpu "
                   "(the tray number in the rack file, or the node's fabric configuration, is wrong)")
    if same_id_elsewhere:
        out.append(f"accel_id {link.accel_id_raw} is also reported by {', '.join(same_id_elsewhere)} (must be unique)")
    unread = smi is None or smi.accelerator_id_raw in ("", "N/A", None)
    if unread:
        if smi_read and not out:
            shown = "lists no such GPU" if smi is None else f"shows ACCELERATOR_ID={smi.accelerator_id_raw or 'nothing'}"
            raise CouldNotObserve(f"{where}: amd-smi fabric {shown}: the suite could not read it to compare "
                                  f"with ualink/accel_id={link.accel_id_raw}")
    elif smi is not None and smi.accelerator_id_raw != (link.accel_id_raw or ""):
        out.append(f"amd-smi fabric ACCELERATOR_ID={smi.accelerator_id_raw} but ualink/accel_id={link.accel_id_raw}")
    return out


def same_accel_id(link: Link, where: str, others: dict[str, Link]) -> list[str]:
    """Where else (of `others`, by where) the same set accel_id is reported: FAB-ACCEL-ID's
    uniqueness, within a node and across the rack."""
    if link.accel_id is None:
        return []
    return [w for w, o in others.items() if w != where and o.accel_id == link.accel_id]


def _gpu_link(got: Across[Numbered] | Across[Trained], where: str, attrs: tuple[str, ...]) -> Link:
    """The link of the GPU a "rack-gpu" item judges, read whole (`attrs` not empty)."""
    links = got.mine.links
    if got.gpu is None or not 0 <= got.gpu < len(links):
        raise CouldNotObserve(f"{where}: no link read for this GPU")
    return readable(where, links[got.gpu], attrs)


def accel_item(got: Across[Numbered], rack: Rack, where: str) -> list[str]:
    """FAB-ACCEL-ID for one GPU: its accel_id is 4*(tray-1)+gpu, no other GPU of the rack (the
    nodes read) reports it, and amd-smi fabric shows the same; amd-smi unreadable is
    could-not-observe unless the driver's value already shows the fault."""
    link = _gpu_link(got, where, ("accel_id_raw",))
    mine = got.mine
    smi = next((g for g in mine.smi if g.gpu == got.gpu), None)
    expected = accel.expected_accel_id(rack.node(got.node).tray, got.gpu or 0, rack.gpus_per_node)
    every = {li.where(n): li for n, f in got.facts.items() for li in f.links}
    try:
        return accel_id(where, expected, link, smi, same_accel_id(link, link.where(got.node), every), smi_read=True)
    except CouldNotObserve:
        if mine.smi_error is not None:
            raise mine.smi_error from None
        raise


def accel_shown(got: Across[Numbered], rack: Rack) -> list[Shown]:
    mine, g = got.mine, got.gpu or 0
    link = mine.links[g] if g < len(mine.links) else None
    smi = next((s for s in mine.smi if s.gpu == g), None)
    tray = rack.node(got.node).tray
    return [Shown("accel_id", f"expected {accel.expected_accel_id(tray, g, rack.gpus_per_node)} (tray {tray}, gpu {g})\n"
                              f"ualink/accel_id: {link.accel_id_raw if link else '(not read)'}\namd-smi ACCELERATOR_ID: "
                              + (smi.accelerator_id_raw if smi else f"(not read: {mine.smi_error})" if mine.smi_error
                                 else "(GPU not in amd-smi fabric output)"))]


def accel_facts(got: Across[Numbered], where: str) -> list[Fact]:
    links, g = got.mine.links, got.gpu or 0
    raw = links[g].accel_id_raw if g < len(links) else None
    return [Fact("ualink.accel_id", raw)] if raw else []


declare(across_gpus("FAB-ACCEL-ID", probe=fabric_fields.numbered, judge=accel_item, shows=accel_shown,
                    facts=accel_facts))


# --- FAB-POD --------------------------------------------------------------------------------
Domain = tuple[str | None, str | None]


def trained_domains(links: Mapping[str, Link], active: Sequence[str]) -> dict[str, Domain]:
    """where -> (ppod_id, vpod_id) of the links in an active state (what FAB-POD compares)."""
    return {w: (li.ppod_id, li.vpod_id) for w, li in links.items() if li.accel_state in active}


def pod_outliers(trained: Mapping[str, Domain], where: str = "FAB-POD PPOD_ID/VPOD_ID") -> tuple[Domain, list[str]]:
    """(the domain most trained links share, findings for every link outside it). `trained`:
    where -> (ppod_id, vpod_id) of links in an active state only (an untrained link reads an
    all-zero PPOD: FAB-STATE's finding, not a pod mismatch). Nothing trained: could not observe."""
    require_records(trained, "trained links (every link read is untrained: FAB-STATE)", where)
    groups: dict[Domain, list[str]] = {}
    for w, pv in trained.items():
        groups.setdefault(pv, []).append(w)
    major = max(groups.values(), key=len)
    ref = trained[major[0]]
    return ref, [f"{w} ppod={pv[0]} vpod={pv[1]}" for pv, ws in groups.items() if ws is not major for w in ws]


def pod_agrees(got: Across[Settled], rack: Rack, where: str) -> list[str]:
    """FAB-POD for one node: its trained links in the fabric domain (PPOD_ID, VPOD_ID) most trained
    links of the rack share (the nodes that answered). An untrained link is FAB-STATE's finding,
    not a pod mismatch; a node with no trained link could not be compared (could not observe)."""
    mine = {li.where(got.node) for li in got.mine.links}
    every = {li.where(n): li for n, s in got.facts.items() for li in s.links}
    trained = trained_domains(every, rack.fabric.active_states)
    require_records([w for w in trained if w in mine], "trained links to compare (every link is untrained: FAB-STATE)",
                    f"{where}: FAB-POD PPOD_ID/VPOD_ID")
    ref, _ = pod_outliers(trained)
    odd = [f"{w} ppod={pv[0]} vpod={pv[1]}" for w, pv in trained.items() if w in mine and pv != ref]
    return [f"{'; '.join(odd)} differ from the rest of the rack (ppod={ref[0]} vpod={ref[1]})"] if odd else []


def pod_shown(got: Across[Settled], rack: Rack) -> list[Shown]:
    every = {li.where(n): li for n, s in got.facts.items() for li in s.links}
    trained = trained_domains(every, rack.fabric.active_states)
    untrained = [w for w in every if w not in trained]
    return [Shown("PPOD_ID / VPOD_ID", "\n".join(f"{k}: ppod={p} vpod={v}" for k, (p, v) in trained.items())
                  + (f"\nnot trained (left to FAB-STATE): {', '.join(untrained)}" if untrained else "")
                  + (f"\nnot read: {', '.join(got.unseen)}" if got.unseen else ""))]


declare(across("FAB-POD", probe=ualink.settled, judge=pod_agrees, shows=pod_shown))


# --- FAB-TRAINING ---------------------------------------------------------------------------
def training_values(link: Link) -> dict[str, str | None]:
    return {"ualink.local_accels": link.local_accels, "ualink.station_lane_en_bitmap": link.station_lane_en_bitmap}


def training_vs_peers(link: Link, peers: dict[str, Link]) -> list[str]:
    """Non-zero values; the bitmap identical to the node's other cards (the majority)."""
    out = []
    ids = link.local_accel_ids
    if not ids:
        out.append(f"local_accels={link.local_accels!r} (empty or not a list of accelerator ids)")
    if not link.bitmap_nonzero:
        out.append(f"station_lane_en_bitmap={link.station_lane_en_bitmap!r} (no lane enabled)")
    bitmaps = Counter(p.station_lane_en_bitmap for p in peers.values())
    if len(bitmaps) > 1:
        ref, n = bitmaps.most_common(1)[0]
        if link.station_lane_en_bitmap != ref and n > 1:
            same = [w for w, p in peers.items() if p.station_lane_en_bitmap == ref]
            out.append(f"station_lane_en_bitmap={link.station_lane_en_bitmap} differs from its peers on the node "
                       f"({', '.join(same)}: {ref})")
        elif n == 1:
            out.append("station_lane_en_bitmap differs between every card of the node: "
                       + ", ".join(f"{w}={p.station_lane_en_bitmap}" for w, p in peers.items()))
    return out


def training_vs_baseline(where: str, link: Link, baseline: BaselineView) -> tuple[list[str], list[str]]:
    """(findings, missing): values that moved since the recorded healthy boot, and facts the
    baseline does not have for this GPU."""
    out, missing = [], []
    for name, now in training_values(link).items():
        old = baseline.get(name, where)
        if old is None:
            missing.append(name)
        elif str(old.value) != str(now):
            out.append(f"{name.split('.', 1)[1]}={now} but the healthy baseline has {old.value} "
                       f"({baseline.describe()})")
    return out, missing


def training_item(got: Across[Trained], rack: Rack, where: str) -> list[str]:
    """FAB-TRAINING for one GPU: first against its peers on the node, then against the healthy boot
    recorded by --record-baseline. While recording, only the peers are compared; with no baseline
    the check cannot judge and says so (it never passes silently)."""
    link = _gpu_link(got, where, ("local_accels", "station_lane_en_bitmap"))
    found = training_vs_peers(link, {li.where(got.node): li for li in got.mine.links})
    recorded = got.mine.recorded
    if found or recorded.recording:
        return found
    if recorded.baseline is None:
        raise CouldNotObserve(f"{where}: no baseline recorded: run `pytest -m fabric --record-baseline` "
                              f"on a healthy boot (rack file 'baseline' = {rack.baseline}), then compare")
    found, missing = training_vs_baseline(f"{got.node}/card{got.gpu}", link, recorded.baseline)
    if missing and not found:
        raise CouldNotObserve(f"{where}: the baseline {recorded.baseline.describe()} has no {', '.join(missing)} for "
                              "this GPU: record one on a healthy boot of this rack (--record-baseline)")
    return found


def training_shown(got: Across[Trained], rack: Rack) -> list[Shown]:
    return [Shown("link training", "\n".join(
        f"{li.where(got.node)}: local_accels={li.local_accels} station_lane_en_bitmap={li.station_lane_en_bitmap}"
        for li in got.mine.links))]


def training_facts(got: Across[Trained], where: str) -> list[Fact]:
    """The GPU's training values (what --record-baseline records), unless they differ from its
    peers on the node: a card trained otherwise than its peers never becomes a baseline."""
    links, g = got.mine.links, got.gpu or 0
    if g >= len(links) or training_vs_peers(links[g], {li.where(got.node): li for li in links}):
        return []
    return [Fact(name, value) for name, value in training_values(links[g]).items() if value is not None]


declare(across_gpus("FAB-TRAINING", probe=ualink.trained, judge=training_item, shows=training_shown,
                    facts=training_facts))


# --- FAB-UNPOPULATED ------------------------------------------------------------------------


def unpopulated(node: str, gpus: list[amdsmi.FabricGpu], links: dict[int, Link]) -> list[str]:
    """`links`: by GPU index (amd-smi's gpu). Every field must be classified; a classification must
    agree with what the driver has.
    Nothing to classify (no GPU, or a GPU without the fields) is could-not-observe, never healthy."""
    require_records(gpus, "GPU blocks", f"node {node}: amd-smi fabric")
    out = []
    for g in gpus:
        link = links.get(g.gpu)
        name = link.where(node) if link is not None else f"{node}/gpu{g.gpu}"
        require_records(g.fields, "BANDWIDTH/LATENCY/VERSION fields", f"{name}: amd-smi fabric")
        absent = [n.upper() for n in amdsmi.UNPOPULATED_FIELDS if n not in g.fields]
        if absent:
            raise CouldNotObserve(f"{name}: amd-smi fabric shows no {', '.join(absent)}: "
                                  "the suite cannot classify what it did not read")
        for f in g.fields.values():
            where = f"{name} {f.name.upper()}: {f.raw}"
            if f.status == amdsmi.UNKNOWN:
                out.append(f"{where} is neither a measurement in {amdsmi.UNPOPULATED_FIELDS[f.name][0] or 'a number'}"
                           " nor a known unpopulated marker: the suite cannot tell which it is")
                continue
            sysfs = getattr(link, f.name, None) if link is not None and f.name in ("bandwidth", "latency") else None
            if sysfs is None:
                continue
            drv = amdsmi.classify(f.name, sysfs.strip(), amdsmi.UNPOPULATED_FIELDS[f.name][0])
            if drv.status == amdsmi.POPULATED and f.status == amdsmi.NOT_POPULATED:
                out.append(f"{where} reads as unpopulated, but the driver's ualink/{f.name} is {sysfs.strip()}: "
                           f"amd-smi's {f.raw} would be taken for a measurement of this link")
            elif f.status == amdsmi.POPULATED and drv.status == amdsmi.NOT_POPULATED:
                out.append(f"{where} looks like a measurement, but the driver's ualink/{f.name} is {sysfs.strip()} "
                           "(unpopulated): the amd-smi value is not a reading of this link")
            elif f.status == drv.status == amdsmi.POPULATED and f.value != drv.value:
                out.append(f"{where} but the driver's ualink/{f.name} is {sysfs.strip()}")
    return out


def unpopulated_item(got: fabric_fields.Fields, rack: Rack, where: str) -> list[str]:
    """FAB-UNPOPULATED for one node: every amd-smi fabric field classified, and in agreement with the driver."""
    return unpopulated(got.node, got.gpus, got.links)


def unpopulated_shown(got: fabric_fields.Fields, rack: Rack) -> list[Shown]:
    return [Shown("amd-smi fabric --json", got.smi_shown),
            Shown("classification", amdsmi.table(got.gpus) + "\n\n(driver ualink/bandwidth, latency: " + ", ".join(
                f"{li.where(got.node)}={li.bandwidth}/{li.latency}" for li in got.links.values()) + ")")]


declare(Check("FAB-UNPOPULATED", "node", probe=fabric_fields.fields, judge=unpopulated_item, shows=unpopulated_shown))


# --- FAB-P2P --------------------------------------------------------------------------------


def p2p(run: PairRun) -> list[str]:
    if run.error:
        return []  # the test raises could-not-observe for these
    out = []
    for side in (run.server, run.client):
        if side is None:
            out.append(f"{run.server.node}: the exporter exited before the importer started "
                       f"(`{run.server.command}`): {_tail(run.server.output)}")
            continue
        got = ubench.parse_p2p(side.output)
        if got.ok:
            continue
        if got.fatal:
            where = " (in the import path: the remote handle mapped, access failed)" \
                if got.fatal_file == "ualoe_p2p.cpp" and got.fatal_line == 49 else ""
            out.append(f"{side.node} ({side.role}): {got.fatal}{where}")
        elif got.result:
            out.append(f"{side.node} ({side.role}): {got.result}")
        elif not side.output.strip() and not side.ended_by_suite:
            raise CouldNotObserve(f"{side.node} ({side.role}): `{side.command}` exited with no output at all")
        else:
            sat = "ended by the suite at its bound" if side.ended_by_suite else "exited"
            out.append(f"{side.node} ({side.role}): no RESULT line (the tool {sat}; `{side.command}`)"
                       + (f"; last output: {_tail(side.output)}" if side.output.strip() else "; no output at all"))
    return out


def _tail(text: str, n: int = 2) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) if lines else "(nothing)"


def ran(run: PairRun, where: str) -> PairRun:
    """The pair's run, when the suite could run it; could not observe naming why not (transport,
    the tool not installed): never a fabric finding."""
    if run.error:
        raise CouldNotObserve(f"{where}: {run.tool} could not be run: {run.error}")
    return run


def sides_shown(run: PairRun) -> list[Shown]:
    """Both sides' commands and outputs (shown whatever the verdict)."""
    return [Shown(f"{run.tool} {side.role} on {side.node}", f"$ {side.command}\n{side.output}"
                  + ("\n(ended by rackgate at its bound)" if side.ended_by_suite else ""))
            for side in (run.server, run.client) if side is not None]


def p2p_item(run: PairRun, rack: Rack, where: str) -> list[str]:
    """FAB-P2P for one pair: both sides of its ualoe_p2p run printed a passing RESULT."""
    return p2p(ran(run, where))


def p2p_shown(run: PairRun, rack: Rack) -> list[Shown]:
    return sides_shown(run)


declare(per_pair("FAB-P2P", probe=pair_runs.p2p, judge=p2p_item, shows=p2p_shown))


# --- FAB-BW ---------------------------------------------------------------------------------


def bw_figures(run: PairRun, patterns: dict[str, str] | None = None) -> dict[str, float] | None:
    if run.client is None:
        return None
    return ubench.parse_bw(run.client.output, patterns).final


def bandwidth(run: PairRun, all_runs: dict[str, PairRun], cfg: FabricExpect) -> list[str]:
    if run.error:
        return []
    pats = getattr(cfg, "bw_patterns", None)
    mine = bw_figures(run, pats)
    if mine is None:
        side = run.client or run.server
        fatal = ubench.parse_bw(side.output).fatal
        if not fatal and not side.ended_by_suite and side.output.strip():
            raise UnrecognisedOutput(f"{side.node} ({side.role}): ualoe_bw printed no read/write/bidirectional "
                                     "figures in a layout the suite knows; name them with fabric.bw_patterns in the "
                                     f"rack file (direction -> regex). Last output: {_tail(side.output)}")
        how = fatal or ("the tool sat with no table and was ended by the suite at its bound"
                        if side.ended_by_suite else "no output at all")
        return [f"{side.node} ({side.role}): no read/write/bidirectional table: {how} "
                "(a leftover listener on either node makes the next round fail this silently: see FAB-LEFTOVER)"]
    out = []
    tcp = [d for d, v in mine.items() if v <= cfg.bw_tcp_band_gbps]
    if tcp:
        out.append(f"{', '.join(f'{d} {mine[d]:.1f} GB/s' for d in tcp)}: the ~4.5 GB/s TCP-fallback band "
                   f"(<= fabric.bw_tcp_band_gbps {cfg.bw_tcp_band_gbps:g}), two orders of magnitude below the fabric")
    floor = [f"{d} {mine[d]:.1f} < floor {f:g}" for d, f in cfg.bw_floor_gbps.items() if d in mine and mine[d] < f]
    if floor and not tcp:
        out.append(f"below the rack file's floor (fabric.bw_floor_gbps): {', '.join(floor)} GB/s")
    others = {k: bw_figures(r, pats) for k, r in all_runs.items()}
    good = {k: v for k, v in others.items() if v is not None}
    if len(good) > 1:
        best_id = max(good, key=lambda k: good[k].get("bidir", 0))
        best = good[best_id]
        slow = [f"{d} {mine[d]:.1f} vs {best[d]:.1f}" for d in ("read", "write", "bidir")
                if d in mine and d in best and mine[d] < best[d] * (1 - cfg.bw_tolerance)]
        if slow and best_id != run.id and not tcp:
            out.append(f"more than {cfg.bw_tolerance:.0%} below the best pair measured in this run ({best_id}): "
                       + ", ".join(slow) + " GB/s")
    return out


def bw_item(got: Measured, rack: Rack, where: str) -> list[str]:
    """FAB-BW for one pair: its read/write/bidirectional GB/s, against the TCP band, the rack file's
    floor and the best pair of this session."""
    return bandwidth(ran(got.run, where), dict(got.every), rack.fabric)


def bw_shown(got: Measured, rack: Rack) -> list[Shown]:
    table = "\n".join(f"{k}: " + (", ".join(f"{d} {v:.1f}" for d, v in f.items()) if f else "no table")
                      for k, f in ((k, bw_figures(r)) for k, r in got.every.items()))
    return sides_shown(got.run) + [Shown("GB/s of every pair this run", table)]


def bw_facts(got: Measured, where: str) -> list[Fact]:
    return [Fact(f"fabric.ubench07.{d}_gbps", v, unit="GB/s") for d, v in (bw_figures(got.run) or {}).items()]


declare(per_pair("FAB-BW", probe=pair_runs.bw, judge=bw_item, shows=bw_shown, facts=bw_facts))


# --- FAB-LEFTOVER ---------------------------------------------------------------------------


def leftovers(scans: list[LeftoverScan]) -> list[str]:
    out = []
    seen: set[int] = set()
    for s in scans:
        for p in s.foreign:
            if p.pid in seen:
                continue
            seen.add(p.pid)
            out.append(f"{s.node}: PID {p.pid} `{p.args}` found {s.when}; not started by rackgate, so left "
                       f"running: end it by PID with `{p.kill_command}` (never `pkill -f ualoe`)")
        for p in s.found:
            if p.pid in s.ours and s.when.startswith("after") and p.pid not in seen and p.pid not in s.unended:
                seen.add(p.pid)
                out.append(f"{s.node}: PID {p.pid} `{p.args}` (started by rackgate) still present {s.when} "
                           "after being ended (unkillable: device memory stays held)")
    return out


def no_unsure_leftovers(scans: list[LeftoverScan]) -> None:
    """Could not observe: a process of ours that no signal reached, or a ubench07 process that
    matches what rackgate started on the node while the start's reply was lost (it may be the
    suite's own, under a PID it never learnt): neither healthy nor a finding."""
    for s in scans:
        for p in s.found:
            if p.pid in s.unended:
                raise CouldNotObserve(f"{s.node}: PID {p.pid} `{p.args}` (started by rackgate) still runs {s.when}: "
                                      "no signal could be sent to it (the pair's error says what kill answered); "
                                      f"end it with `{p.kill_command}`")
        for p in s.unsure_found:
            raise CouldNotObserve(
                f"{s.node}: PID {p.pid} `{p.args}` found {s.when} may be the one rackgate started there when "
                "the reply to its start was lost: not ended by rackgate (it never kills a PID it did not "
                f"learn); if no one else runs ubench07 on {s.node}, end it with `{p.kill_command}`")


def leftover_item(got: NodeScans, rack: Rack, where: str) -> list[str]:
    """FAB-LEFTOVER for one node: no ubench07 process the suite did not start (or could not end)
    around any round on it. No scan (every pair with it unrun) is could not observe."""
    if not got.scans:
        raise CouldNotObserve(f"{where}: no ubench07 pair with it ran (its peers were unreachable)")
    errors = [s.error for s in got.scans if s.error]
    if errors:
        raise CouldNotObserve(f"{where}: {errors[0]}")
    found = leftovers(got.scans)
    if not found:
        no_unsure_leftovers(got.scans)  # could not observe: a process that may be the suite's own
    return found


def leftover_shown(got: NodeScans, rack: Rack) -> list[Shown]:
    return [Shown(f"{tool}: processes rackgate started and ended at their bound", "\n".join(ended))
            for tool, ended in got.ended.items()] + [Shown("ps scans", "\n".join(
                f"{s.when}: " + (s.error or (", ".join(f"{p.pid} {p.args}" for p in s.found) or "none"))
                for s in got.scans))]


def one_node(rack: Rack) -> str:
    """Not applicable: a rack of one node has no ubench07 pair."""
    return "the rack file lists one node: ubench07 needs a peer" if len(rack.nodes) < 2 else ""


declare(Check("FAB-LEFTOVER", "node", probe=pair_runs.scans, judge=leftover_item, shows=leftover_shown,
              applies=one_node))


# --- FAB-DMESG ------------------------------------------------------------------------------


def dmesg_pair(runs: list[PairRun], amap: dict[int, str]) -> tuple[list[str], str]:
    """(findings, note): fabric errors either node logged while the pair ran; the note names the
    'importer logs, exporter silent' signature when a run shows it."""
    ran = [r for r in runs if not r.error and r.client is not None]
    require_records(ran, "ubench07 runs that started both sides", "FAB-DMESG",
                    "; ".join(r.error for r in runs if r.error))
    for run in ran:
        missing = [n for n in run.pair if n not in run.dmesg]
        if missing:
            raise CouldNotObserve(f"[{run.tool}] the kernel log of {', '.join(missing)} was not read for this run")
    out, silent = [], False
    for run in ran:
        importer = run.client.node if run.client else run.pair[1]
        hits = {node: dmesg.match(lines, accel.FAB_DMESG) for node, lines in run.dmesg.items()}
        for node, h in hits.items():
            out += [f"[{run.tool}] {ln}" for ln in accel.describe_hits(node, h, amap)]
        if hits.get(importer) and not hits.get(run.server.node):
            silent = True
    note = ("importer logs, exporter silent: the exporter never saw the HELLO, so packets are not crossing "
            "the wire" if silent and out else "")
    return out, note


def dmesg_item(got: PairLogs, rack: Rack, where: str) -> list[str]:
    """FAB-DMESG for one pair: no fabric error in either node's kernel log while its runs ran."""
    for run in got.runs:
        ran(run, where)
    found, note = dmesg_pair(got.runs, accel.accel_map(rack, dict(got.cards)))
    return ["; ".join(found) + (f" -- {note}" if note else "")] if found else []


def dmesg_shown(got: PairLogs, rack: Rack) -> list[Shown]:
    return [s for run in got.runs for s in sides_shown(run)] + [
        Shown(f"dmesg on {node} during {run.tool}", "\n".join(ln.raw for ln in lines) or "(nothing new)")
        for run in got.runs for node, lines in run.dmesg.items()]


declare(per_pair("FAB-DMESG", probe=pair_runs.logs, judge=dmesg_item, shows=dmesg_shown))


# --- FAB-COLLECTIVE / FAB-TRANSPORT ---------------------------------------------------------


def collective_worlds(out: collective.ProbeOutput, sizes: list[int]) -> list[str]:
    found = []
    for ws in sizes:
        w = out.worlds.get(ws)
        if w is None or w.status == "missing":
            found.append(f"ws={ws}: no result from the probe")
        elif w.status == "timeout":
            found.append(f"ws={ws}: timed out ({w.ranks_ok}/{ws} ranks finished in {w.elapsed_s}s)")
        elif w.status != "ok":
            found.append(f"ws={ws}: {w.status}: " + "; ".join(w.wrong_ranks() or ["no rank reported a sum"]))
    if found and out.last_completed_minus_one:
        found.append("NCCL watchdog: 'last completed NCCL work: -1' (the collective kernel never ran): "
                     + out.watchdog[0][:300])
    return found


def collective_across(out: collective.ProbeOutput) -> list[str]:
    w = out.across
    if w is None or w.status == "missing":
        return ["the run across nodes gave no result"]
    if w.status == "timeout":
        found = [f"ws={w.ws} across nodes: timed out ({w.ranks_ok} of this node's ranks finished)"]
    elif w.status != "ok":
        found = [f"ws={w.ws} across nodes: {w.status}: " + "; ".join(w.wrong_ranks() or ["no rank reported a sum"])]
    else:
        return []
    if out.last_completed_minus_one:
        found.append("NCCL watchdog: 'last completed NCCL work: -1'")
    return found


def transports(out: collective.ProbeOutput, healthy: list[str]) -> list[str]:
    # `Using network Socket` alone is NCCL naming its network plugin (printed even by a one-rank
    # world on a host without IB: seen on an H200, docs/fabric.md); the channels' `via` is what
    # the traffic takes. It is named with a socket channel, never judged without one.
    found = []
    bad = [t for t in out.transports if not collective.transport_ok(t, healthy)]
    if bad:
        found.append(f"NCCL chose {', '.join('via ' + t for t in bad)} (expected {', '.join(healthy)})")
        if "Socket" in out.networks:
            found.append("NCCL INFO Using network Socket")
    return found


def usable(run: collective.NodeRun, where: str) -> collective.NodeRun:
    """The node's collective run when the probe started with torch; could not observe otherwise."""
    if not run.out.started:
        raise CouldNotObserve(f"{where}: the collective probe did not start (rc={run.rc}): {run.last_line}")
    if run.out.torch.startswith("missing"):
        raise CouldNotObserve(f"{where}: the container's python has no torch ({run.out.torch})")
    return run


def require_results(run: collective.NodeRun, where: str, worlds: Sequence[int], across: bool = False) -> None:
    """A world the probe never reported on (its output cut short, the process ended) is nothing
    to judge: could not observe, naming what came back -- never a collective fault."""
    out = run.out
    missing = [f"ws={ws}" for ws in worlds if out.worlds.get(ws) is None or out.worlds[ws].status == "missing"]
    if across and (out.across is None or out.across.status == "missing"):
        missing.append("the run across nodes")
    if missing:
        raise CouldNotObserve(f"{where}: the collective probe reported no result for {', '.join(missing)} "
                              f"(rc={run.rc}; last line: {run.last_line[:200]})")


def _busbw(run: collective.NodeRun, cfg: FabricExpect) -> dict[int, collective.Bandwidth | None]:
    """ws -> the bus bandwidth of this node's own worlds of 2+ ranks that completed (when the rack
    file measures it: fabric.collective_bw_bytes)."""
    if not cfg.collective_bw_bytes:
        return {}
    ok = {ws: run.out.worlds.get(ws) for ws in cfg.collective_world_sizes if ws > 1}
    return {ws: w.bandwidth() for ws, w in ok.items() if w is not None and w.status == "ok"}


def _own_worlds_ok(out: collective.ProbeOutput, sizes: Sequence[int]) -> bool:
    """The node's probe ran with torch and every one of its own worlds completed."""
    return out.started and not out.torch.startswith("missing") and all(
        out.worlds.get(ws) is not None and out.worlds[ws].status == "ok" for ws in sizes)


def collective_item(got: Across[collective.NodeRun], rack: Rack, where: str) -> list[str]:
    """FAB-COLLECTIVE for one node: its own worlds (1, 2, 4 ranks) completed with the right sums; its
    ranks' part of the run across nodes completed -- blamed on this node only when every other
    node completed its own worlds (otherwise this node's failure across is could not observe,
    naming the nodes that did not: judged there; not run while a node could not be reached -- the
    probe runs across nodes only when every node is reachable -- could not observe naming it, after
    this node's own worlds were judged); each own
    world's bus bandwidth at or above fabric.collective_busbw_floor_gbps."""
    cfg = rack.fabric
    mine = usable(got.mine, where)
    require_results(mine, where, cfg.collective_world_sizes)
    found = collective_worlds(mine.out, cfg.collective_world_sizes)
    if len(rack.nodes) > 1:
        if not mine.across_asked:  # not run: it needs every node's ranks (rackgate/fabric/collective.py)
            if found:
                return found
            raise CouldNotObserve(f"{where}: the run across nodes was not started, it needs every node's ranks: "
                                  + ("; ".join(f"{n}: {got.unseen[n]}" for n in sorted(got.unseen))
                                     or "a node could not be reached"))
        require_results(mine, where, [], across=True)
        far = collective_across(mine.out)
        others = sorted(n for n in [*got.facts, *got.unseen] if n != got.node
                        and (n in got.unseen or not _own_worlds_ok(got.facts[n].out, cfg.collective_world_sizes)))
        if far and not found and others:
            raise CouldNotObserve(f"{where}: the run across nodes failed on this node's ranks ({far[0]}), but "
                                  f"{', '.join(others)} did not complete its own worlds (failed, or could not be "
                                  "observed): judged there")
        found += [f"across nodes: {f}" for f in far]
    if found:
        return found
    for ws, bw in _busbw(mine, cfg).items():
        if bw is None:
            w = mine.out.worlds[ws]
            raise CouldNotObserve(f"{where}: world {ws}: no bus bandwidth from the collective probe "
                                  f"({len(w.timings)} of {ws} ranks printed a time)")
        if cfg.collective_busbw_floor_gbps and bw.busbw_gbps < cfg.collective_busbw_floor_gbps:
            found.append(f"world {ws}: busbw {bw.busbw_gbps:.4g} GB/s < floor {cfg.collective_busbw_floor_gbps:g}")
    return found


def collective_shown(got: Across[collective.NodeRun], rack: Rack) -> list[Shown]:
    mine = got.mine
    bws = _busbw(mine, rack.fabric)
    return [Shown(f"collective probe on {got.node}", mine.shown)] + (
        [Shown("all_reduce bus bandwidth", "\n".join(f"ws={ws}: {bw.describe() if bw else 'no time printed'}"
                                                     for ws, bw in bws.items()))] if bws else [])


def collective_facts(got: Across[collective.NodeRun], where: str) -> list[Fact]:
    if got.node not in got.facts:
        return []
    worlds = got.facts[got.node].out.worlds  # the bandwidth of every own world of 2+ ranks that completed and timed
    bws = {ws: w.bandwidth() for ws, w in sorted(worlds.items()) if ws > 1 and w.status == "ok"}
    return [Fact("fabric.collective.busbw_gbps", bw.busbw_gbps, unit="GB/s", where=f"{got.node}/ws{ws}")
            for ws, bw in bws.items() if bw is not None]


declare(across("FAB-COLLECTIVE", probe=collective.node_run, judge=collective_item, shows=collective_shown,
               facts=collective_facts))


def transport_item(run: collective.NodeRun, rack: Rack, where: str) -> list[str]:
    """FAB-TRANSPORT for one node: every channel NCCL set up in the collective run goes the healthy way."""
    usable(run, where)
    if not run.out.transports:
        raise CouldNotObserve(f"{where}: NCCL printed no transport line (does NCCL_DEBUG=INFO reach the container, "
                              "and is the backend NCCL?)")
    found = transports(run.out, rack.fabric.healthy_transports)
    if not found:
        # healthy only on the whole output: a socket fallback may sit in the part that never came
        # back (the run across nodes, where the fabric matters most, prints last)
        if len(rack.nodes) > 1 and not run.across_asked:
            raise CouldNotObserve(f"{where}: NCCL's channels across nodes were not set up: the run across nodes "
                                  "needs every node's ranks and a node could not be reached (FAB-COLLECTIVE names it)")
        require_results(run, where, rack.fabric.collective_world_sizes, across=len(rack.nodes) > 1)
    return found


def transport_shown(run: collective.NodeRun, rack: Rack) -> list[Shown]:
    return [Shown("NCCL transports", "via: " + (", ".join(run.out.transports) or "(none printed)")
                  + "\nnetwork: " + (", ".join(run.out.networks) or "(none printed)"))]


declare(Check("FAB-TRANSPORT", "node", probe=collective.node_run, judge=transport_item, shows=transport_shown))
