"""Judgments over the GPUs' hardware error counters (rackgate/probes/ras.py): PLAT-RAS on one
snapshot, FAB-ERRORS and SRV-HW-ERRORS on what rose between the snapshots the bracket took at a
stage's start and end (rackgate/fixtures/bracket.py).

A GPU without a ras/ directory, a counter file that is absent or could not be read, is
could-not-observe naming it -- never "no errors" -- unless a finding was already made.
"""
from __future__ import annotations

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import ras as ras_probe
from ..probes.ras import GpuCounters, Rise, Snapshot
from .declare import Check, Fact, Shown, declare

# amdgpu_ras.c: "typical ECC bad page rate is 1 bad page per 100MB VRAM" (RAS_BAD_PAGE_COVER),
# the driver's bad page threshold when amdgpu.bad_page_threshold asks for the formula.
BAD_PAGE_COVER_MIB = 100


def bad_page_limit(rack: Rack) -> int | None:
    p = rack.platform
    if p.ras_bad_pages_max is not None:
        return p.ras_bad_pages_max
    if p.hbm_gib is None:
        return None
    return int(p.hbm_gib * 1024 // BAD_PAGE_COVER_MIB)


# ras/event_state's event types (amdgpu_ras.c dump_event: "Fatal Error", named "Fault Error" in the
# first version, "Poison Creation", "Poison Consumption"): each is an uncorrectable event.
RAS_EVENTS = ("fatal_error", "fault_error", "poison_creation", "poison_consumption")


NO_BAD_PAGES = "no ras/gpu_vram_bad_pages"


def _unseen(g: GpuCounters) -> list[str]:
    """The sources of one GPU PLAT-RAS needs and could not read."""
    if g.blocks is None:
        return ["no ras/ directory (RAS not enabled or not supported: the driver shows no error counts)"]
    out = []
    if not g.layout:
        found = ", ".join(g.files) or "no file"
        out.append(f"ras/ holds {found}: no per-block error counter of a layout rackgate knows "
                   "(ras/<block>_err_count, ras/aca_<block>)")
    out += [f"{u} unreadable" for u in g.unreadable if u.startswith("ras/")]
    if g.bad_pages is None:
        out.append(NO_BAD_PAGES)
    return out


# --- PLAT-RAS ---------------------------------------------------------------------------------
def ras_level(snap: Snapshot, rack: Rack, where: str) -> list[str]:
    """Uncorrectable errors since the driver loaded, retired pages over the limit, pages the
    driver could not reserve; could-not-observe for what it could not read."""
    limit = bad_page_limit(rack)
    out: list[str] = []
    unseen: list[str] = []
    for g in snap.gpus:
        ue = [f"{b.name} ue: {b.ue}" for b in (g.blocks or {}).values() if b.ue]
        if ue:
            out.append(f"{g.label}: uncorrectable errors since the driver loaded: {', '.join(ue)}")
        de = [f"{b.name} de: {b.de}" for b in (g.blocks or {}).values() if b.de]
        if de:
            out.append(f"{g.label}: deferred (poisoned) uncorrectable errors since the driver loaded: {', '.join(de)}"
                       " (the driver retires their pages as it does an ue's)")
        events = [f"{k.replace('_', ' ')} count {n}" for k, n in (g.events or {}).items() if n and k in RAS_EVENTS]
        if events:
            out.append(f"{g.label}: RAS events since the driver loaded (ras/event_state): {', '.join(events)}")
        pages = g.bad_pages or ()
        unreserved = [p for p in pages if p.flag == "F"]
        if unreserved:
            out.append(f"{g.label}: {len(unreserved)} retired page(s) the driver could not reserve "
                       f"(flag F, first pfn 0x{unreserved[0].pfn:08x})")
        if pages and limit is not None and len(pages) > limit:
            out.append(f"{g.label}: {len(pages)} retired VRAM pages, over the limit of {limit}")
        elif pages and limit is None:
            unseen.append(f"{g.label}: {len(pages)} retired pages and no limit to judge them by "
                          "(set platform.ras_bad_pages_max or platform.hbm_gib)")
        unseen += [f"{g.label}: {u}" for u in _unseen(g)]
    if out:
        return out
    if unseen:
        raise CouldNotObserve(f"{where}: " + "; ".join(unseen))
    if len(snap.gpus) != rack.gpus_per_node:
        raise CouldNotObserve(f"{where}: read the error counters of {len(snap.gpus)} amdgpu cards, expected "
                              f"{rack.gpus_per_node} (gpus_per_node; PLAT-GPUS says which)")
    return []


def ras_shown(snap: Snapshot, rack: Rack) -> list[Shown]:
    return [Shown("GPU error counters (one read of the node)", table(snap))]


def table(snap: Snapshot) -> str:
    lines = []
    for g in snap.gpus:
        c = g.counters()
        ras = " ".join(f"{k.removeprefix('ras.')}={v}" for k, v in c.items() if k.startswith("ras.") and v)
        lines.append(f"{g.label}: ras/ {'absent' if g.blocks is None else ras or 'all 0'}; "
                     f"bad pages {'absent' if g.bad_pages is None else len(g.bad_pages)}; "
                     f"AER cor {c.get('aer.correctable.TOTAL_ERR_COR', '-')} "
                     f"nonfatal {c.get('aer.nonfatal.TOTAL_ERR_NONFATAL', '-')} "
                     f"fatal {c.get('aer.fatal.TOTAL_ERR_FATAL', '-')}; replays {c.get('pcie.replay', '-')}"
                     + (f"; absent: {', '.join(g.absent)}" if g.absent else "")
                     + (f"; unreadable: {', '.join(g.unreadable)}" if g.unreadable else ""))
    return "\n".join(lines) or "(no amdgpu card)"


def ras_facts(snap: Snapshot, where: str) -> list[Fact]:
    return [Fact("platform.ras.bad_pages", len(g.bad_pages), "pages", f"{where}/gpu{g.gpu}")
            for g in snap.gpus if g.bad_pages is not None and g.gpu is not None]


declare(Check("PLAT-RAS", "node", probe=ras_probe.of_node, judge=ras_level, shows=ras_shown, facts=ras_facts))


# --- FAB-ERRORS / SRV-HW-ERRORS: rises during a stage ----------------------------------------
def unbracketable(snap: Snapshot, expected: int) -> str:
    """Why a snapshot cannot bracket a stage on its node ("" when it can): a GPU without a ras/
    directory or error count file shows no ECC to compare, and a card count off leaves GPUs unseen."""
    why = [f"{g.label}: {u}" for g in snap.gpus for u in _unseen(g) if u != NO_BAD_PAGES]
    if len(snap.gpus) != expected:
        why.append(f"{len(snap.gpus)} amdgpu cards, expected {expected} (gpus_per_node)")
    return f"node {snap.node}: " + "; ".join(why) if why else ""


LINK_BLOCKS = ("xgmi_wafl", "pcie_bif")


def kind(counter: str) -> str:
    """What a counter's rise is: 'uncorrectable', 'link', 'aer-correctable' (judged by the storm
    rate), 'correctable' or 'throttle' (amd-smi's violation accumulators: they tick all the time,
    SRV-THROTTLE reads them)."""
    if counter.startswith("throttle."):
        return "throttle"
    if counter.startswith("aer.correctable.") or counter == "kmsg_aer.correctable":
        return "aer-correctable"
    if counter == "kmsg_aer.uncorrectable":  # the kernel log's AER record on the GPU or an upstream port
        return "uncorrectable"
    block = counter.split(".")[1] if counter.startswith("ras.") else ""
    if counter.startswith(("aer.correctable.", "pcie.")) or block in LINK_BLOCKS:
        return "link" if not counter.endswith(".ue") else "uncorrectable"
    if counter.endswith((".ue", ".de")) or counter == "bad_pages" \
            or counter.startswith(("aer.fatal.", "aer.nonfatal.", "ras_event.")):
        return "uncorrectable"
    return "correctable"


def stage_rises(rises: dict[str, list[Rise]], rack: Rack) -> list[str]:
    """stage -> the rises charged to it (one node) -> one finding per GPU and stage."""
    p = rack.platform
    out = []
    for stage, found in rises.items():
        per_gpu: dict[str, list[Rise]] = {}
        for r in found:
            per_gpu.setdefault(r.gpu, []).append(r)
        for gpu, rs in per_gpu.items():
            bad = [r for r in rs if kind(r.counter) == "uncorrectable"]
            link = [r for r in rs if kind(r.counter) == "link"]
            link_total = sum(r.by for r in link)
            ce = sum(r.by for r in rs if kind(r.counter) == "correctable")
            shown = list(bad)
            if link_total > p.ras_link_errors_max_rise:
                shown += link
            aer_cor = [r for r in rs if kind(r.counter) == "aer-correctable"]
            rate = aer_rate(aer_cor)
            if rate > p.aer_storm_per_min:
                shown += aer_cor
            if p.ras_ce_max_rise is not None and ce > p.ras_ce_max_rise:
                shown += [r for r in rs if kind(r.counter) == "correctable"]
            if shown:
                storm = (f" (correctable PCIe AER errors at {rate:.1f} a minute, allowed {p.aer_storm_per_min:g}: "
                         "platform.aer_storm_per_min)" if rate > p.aer_storm_per_min else "")
                out.append(f"{gpu} during {stage}: " + ", ".join(
                    f"{r.counter} {r.before} -> {r.after}" for r in shown) + storm)
    return out


def aer_rate(rises: list[Rise]) -> float:
    """Correctable AER errors a minute over a stage, the larger of two counts: the GPU's own
    TOTAL_ERR_COR (its named parts add up to it: counted once) and the kernel log's correctable
    records charged to the GPU or its upstream ports; over the stage's time, a stage shorter than a
    minute counted as one."""
    logged = [r for r in rises if r.counter == "kmsg_aer.correctable"]
    counted = [r for r in rises if r.counter != "kmsg_aer.correctable"]
    return max(_rate(counted), _rate(logged))


def _rate(rises: list[Rise]) -> float:
    total = [r for r in rises if r.counter.endswith(".TOTAL_ERR_COR")]
    n = sum(r.by for r in (total or rises))
    # the TOTAL rises once per pair of snapshots it rose in: their times add up; named parts alone
    # (no TOTAL line) share one pair's time
    seconds = sum(r.seconds for r in total) if total else max((r.seconds for r in rises), default=0.0)
    return n / max(seconds / 60.0, 1.0) if n else 0.0


def aer_correctable_by_gpu(rises: dict[str, list[Rise]]) -> dict[str, int]:
    """GPU label -> correctable PCIe AER errors (TOTAL_ERR_COR) added over these stages."""
    out: dict[str, int] = {}
    for found in rises.values():
        for r in found:
            if r.counter == "aer.correctable.TOTAL_ERR_COR":
                out[r.gpu] = out.get(r.gpu, 0) + r.by
    return out


def correctable_by_gpu(rises: dict[str, list[Rise]]) -> dict[str, int]:
    """GPU label -> correctable ECC errors added over these stages (facts for -m regression)."""
    out: dict[str, int] = {}
    for found in rises.values():
        for r in found:
            if kind(r.counter) == "correctable":
                out[r.gpu] = out.get(r.gpu, 0) + r.by
    return out


def rises_item(got: ras_probe.Charged, rack: Rack, where: str) -> list[str]:
    """FAB-ERRORS / SRV-HW-ERRORS on one node: a finding per GPU and stage whose counters rose."""
    return stage_rises(got.rises, rack)


def rises_shown(got: ras_probe.Charged, rack: Rack) -> list[Shown]:
    return [Shown("hardware error counters that rose, by stage", "\n".join(
        f"{s}: " + ("; ".join(r.describe() for r in rs) or "nothing rose") for s, rs in got.rises.items()))]


def rises_facts(got: ras_probe.Charged, where: str) -> list[Fact]:
    """The correctable ECC errors each GPU added over the row's stages (-m regression), named for
    the row's first stage: hw.ecc_ce.fabric at node2/gpu1."""
    slug = got.stages[0].replace(" ", "_")
    return [Fact(f"hw.ecc_ce.{slug}", n, "errors", f"{got.node}/{label.split(' ')[0]}")
            for label, n in correctable_by_gpu(got.rises).items()] + [
            Fact(f"hw.aer_cor.{slug}", n, "errors", f"{got.node}/{label.split(' ')[0]}")
            for label, n in aer_correctable_by_gpu(got.rises).items()]


declare(Check("FAB-ERRORS", "node", probe=ras_probe.fabric_stages, judge=rises_item, shows=rises_shown,
              facts=rises_facts),
        Check("SRV-HW-ERRORS", "node", probe=ras_probe.serving_stages, judge=rises_item, shows=rises_shown,
              facts=rises_facts))


# --- SRV-THROTTLE: throttling residency under load ----------------------------------------------
TICKS = "throttle.accumulation_counter"


def throttling(rises: dict[str, list[Rise]], gpus: list[str], rack: Rack, where: str, unread: str = "") -> list[str]:
    """The share of each stage's accumulation ticks a GPU spent throttled, per violation type
    (amd-smi's <TYPE>_ACCUMULATED over ACCUMULATION_COUNTER), against platform.throttle_max_share.
    A GPU whose accumulation counter did not move has no throttle reading: could not observe."""
    limit = rack.platform.throttle_max_share
    out: list[str] = []
    unseen: list[str] = []
    for stage, found in rises.items():
        for gpu in gpus:
            mine = {r.counter: r.by for r in found if r.gpu == gpu}
            ticks = mine.get(TICKS, 0)
            if ticks <= 0:
                unseen.append(f"{gpu} during {stage}")
                continue
            over = {k.removeprefix("throttle.").removesuffix("_accumulated"): v / ticks for k, v in mine.items()
                    if k != TICKS and v / ticks > limit}
            if over:
                out.append(f"{gpu} during {stage}: throttled " + ", ".join(
                    f"{k} {share:.0%} of the time" for k, share in sorted(over.items()))
                    + f" (allowed {limit:.0%})")
    if out:
        return out
    if unseen:
        raise CouldNotObserve(f"{where}: no throttle accumulators moved (amd-smi metric --throttle) for "
                              + ", ".join(unseen) + (f": {unread}" if unread else ""))
    return []


def throttled_item(got: ras_probe.Throttled, rack: Rack, where: str) -> list[str]:
    return throttling(got.rises, list(got.gpus), rack, got.node, got.unread)


def throttle_shown(got: ras_probe.Throttled, rack: Rack) -> list[Shown]:
    return [Shown("throttle accumulators that rose, by stage", "\n".join(
        f"{s}: " + ("; ".join(r.describe() for r in rs if r.counter.startswith("throttle.")) or "none")
        for s, rs in got.rises.items()))]


declare(Check("SRV-THROTTLE", "node", probe=ras_probe.throttle_stages, judge=throttled_item, shows=throttle_shown))
