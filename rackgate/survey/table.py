"""The survey as text: a table of trays x checks, the ranked sets, and every exclusion's reason."""
from __future__ import annotations

from .model import CHECKS, FAIL, PASS, UNOBSERVED, TrayReport
from .pick import Proposal

MARK = {PASS: "ok", FAIL: "FAIL", UNOBSERVED: "n/o", None: "-"}


def _domain(r: TrayReport) -> str:
    if r.domain is None:
        return "-"
    ppod, vpod = r.domain
    return f"{ppod[-8:] if len(ppod) > 8 else ppod}/{vpod}"


def table(reports: list[TrayReport]) -> str:
    heads = ["node", "tray", *[t for _, _, t in CHECKS], "ppod/vpod", "s"]
    rows = []
    for r in reports:
        rows.append([r.node, str(r.tray), *[MARK[r.cells[k].status if k in r.cells else None] for k, _, _ in CHECKS],
                     _domain(r), f"{r.seconds:.1f}"])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(heads)]

    def line(cols: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()
    out = [line(heads), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    out.append("ok = positive evidence of health; FAIL = the fault was seen; n/o = could not observe "
               "(the tray is out for that reason, no fault is claimed); - = not reached")
    return "\n".join(out)


def proposal(p: Proposal, reports: list[TrayReport]) -> str:
    out = []
    if p.sets:
        out.append(f"best {p.n}-tray sets (one fabric domain, every tray usable), ranked:")
        out += [f"  {i}. {s.describe()}" for i, s in enumerate(p.sets, 1)]
    else:
        sizes = ", ".join(f"ppod={d[0]} vpod={d[1]}: {len(ns)}" for d, ns in p.domains.items()) or "none"
        out.append(f"no {p.n}-tray set: no fabric domain has {p.n} usable trays (usable per domain: {sizes})")
    out.append("excluded:" if p.excluded else "excluded: none")
    for r in reports:
        if r.node in p.excluded:
            out.append(f"  {r.node} (tray {r.tray}): {p.excluded[r.node]}")
    return "\n".join(out)
