"""SRV-BOOT and SRV-RENDEZVOUS: the boot verdict judged (rackgate/probes/boot.py reads it from the
server as launched), and their declarations: one item per server, read whatever the boot's end
(sees="launched"). Each blames the place the boot ended (node3/dp9, node2) with `Finding`."""
from __future__ import annotations

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import boot as probe
from ..probes.boot import Boot
from .declare import Check, Fact, Finding, Shown, declare

ATTACHED = "attached (--atom-url): the suite did not launch this server, its boot was not watched"


def launched_here(rack: Rack) -> str:
    """SKIPPED when the suite only attached: it did not watch a boot."""
    return ATTACHED if rack.server.attach_url else ""


# --- SRV-BOOT -----------------------------------------------------------------------------------
def _indent(text: str) -> str:
    first, _, rest = text.partition("\n")
    return "\n".join([first] + ["           " + x for x in rest.splitlines()[-12:]])


def booted(b: Boot, rack: Rack, where: str) -> list[str]:
    """The reading is keyed by how the boot ended: a fatal line (its signature's meaning), the
    launch command's exit (code and last lines), a stall (SRV-RENDEZVOUS') or the budget."""
    if b.kind == "ready":
        return []
    tail = f"\n           ({b.note})" if b.note else ""
    if b.kind == "fatal":
        root = f"root cause: {b.root_cause}\n           " if b.root_cause else ""
        return [Finding(f"{root}line {b.lineno} of {b.log} after {b.seconds:.1f}s: {b.line}\n"
                        + "\n".join("           " + x for x in b.excerpt.splitlines()[-14:]) + tail, where=b.place,
                        means=f"a fatal line appeared while booting ({b.signature}, in {b.why or 'its record'}): {b.hint}")]
    if b.kind == "stall":
        raise CouldNotObserve(f"the boot did not finish: {b.summary}; see SRV-RENDEZVOUS")
    if b.kind == "died":
        code = f"code {b.exit_code}" if b.exit_code is not None else "no exit code written"
        return [Finding(_indent(b.detail) + tail, where=b.place,
                        means=f"the launch command ended while booting ({code}): how it ended is read above (a signal, an "
                        f"error exit), with the record that explains it when the log has one and where to look next")]
    if b.kind == "budget":
        return [Finding(_indent(b.detail) + tail, where=b.place,
                        means="not ready within the budget; no fatal line seen: the last lines say how far it got "
                        "(a slow load, a hang, or a format the suite does not read)")]
    raise CouldNotObserve(f"the boot could not be watched: {b.detail}")


def boot_shown(b: Boot, rack: Rack) -> list[Shown]:
    out = [Shown(f"log around the deciding line ({b.place})", b.excerpt)] if b.excerpt else []
    if b.kind == "ready":
        line = (f"ATOM's ready line at {b.ready_line_s:.1f}s" if b.ready_line_s is not None
                else "ATOM's ready line not seen")
        out.append(Shown("boot", f"ready by the API (/v1/models lists a model, a completion for it returned) after "
                                 f"{b.seconds:.1f}s; {line}" + (f"; {b.note}" if b.note else "")))
        if b.noted:  # signatures in records that went on (a WARNING "...; using unpinned."): evidence
            out.append(Shown("fatal words in records that are not fatal", "\n".join(b.noted)))
    return out


def cold_start(b: Boot, where: str) -> list[Fact]:
    """The cold start (-m regression), when the server booted."""
    return [Fact("serving.cold_start_s", round(b.seconds, 1), "s", "rack")] if b.kind == "ready" else []


declare(Check("SRV-BOOT", "server", probe=probe.boot, judge=booted, shows=boot_shown, facts=cold_start,
              applies=launched_here, sees="launched"))


# --- SRV-RENDEZVOUS -----------------------------------------------------------------------------
def rendezvous(b: Boot, rack: Rack, where: str) -> list[str]:
    """Every rank passed the NCCL init: a log that stopped after `load RCCL version` is the hang
    (FAILED on that node); ncclCommInitRank is collective, so one node past it means every rank
    joined; a boot that ended before it could not observe it."""
    if b.kind == "stall":
        return [Finding(f"{b.node}: the log stopped at {b.line.strip()[:160]!r} {b.detail} ago and nothing since",
                        where=b.node)]
    if b.kind != "ready" and not b.past_rendezvous:
        raise CouldNotObserve(f"the boot ended before the NCCL rendezvous: {b.summary}")
    return []


def rendezvous_shown(b: Boot, rack: Rack) -> list[Shown]:
    return [Shown(f"last lines on {b.node}", b.excerpt)] if b.kind == "stall" else []


declare(Check("SRV-RENDEZVOUS", "server", probe=probe.boot, judge=rendezvous, shows=rendezvous_shown,
              applies=launched_here, sees="launched"))
