"""The rack map: trays x GPUs, each GPU coloured by its verdict (pass / fail / could not observe /
excluded), in the terminal and as a PNG for the Allure report. A GPU's verdict is the worst
`rackgate.verdicts.Verdict` seen there, said by its `word`; "excluded" and "not run" are the map's own.

    grid = {("node3", 3): ["pass", "fail", "pass", "pass"], ...}   # (node, tray) -> per-GPU verdicts
    print(terminal(grid, notes))
    png = png_map(grid, notes, title="survey of sim-18x4")

Built from a survey (survey_grid) or from a suite run's per-item verdicts (run_grid: an item's id
names its node or GPU: test_x[node2-card1], test_y[node2], a pair test_z[node1-node2]).
"""
from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

from ..ids import place_of
from ..verdicts import Verdict
from ..verdicts import worst as worst_of

if TYPE_CHECKING:
    from ..config import Rack

PASS, FAIL, UNOBSERVED = Verdict.PASSED.word, Verdict.FAILED.word, Verdict.UNOBSERVED.word
EXCLUDED, NOT_RUN = "excluded", "not run"   # a tray left out of the chosen set; nothing ran there
ORDER = (PASS, FAIL, UNOBSERVED, EXCLUDED, NOT_RUN)
SYMBOL = {PASS: "#", FAIL: "X", UNOBSERVED: "?", EXCLUDED: ".", NOT_RUN: " "}
ANSI = {PASS: "\x1b[42;30m", FAIL: "\x1b[41;97m", UNOBSERVED: "\x1b[43;30m", EXCLUDED: "\x1b[100;97m",
        NOT_RUN: "\x1b[0m"}
COLOUR = {PASS: "#2e7d32", FAIL: "#c62828", UNOBSERVED: "#f9a825", EXCLUDED: "#9e9e9e", NOT_RUN: "#ffffff"}
RESET = "\x1b[0m"

Grid = dict[tuple[str, int], list[str]]


# What the map reads of a survey (rackgate.survey's TrayReport and Proposal, which sit above the
# report and are not imported here).
class _Cell(Protocol):
    @property
    def status(self) -> Verdict: ...


class SurveyedTray(Protocol):
    @property
    def node(self) -> str: ...
    @property
    def tray(self) -> int: ...
    @property
    def cells(self) -> Mapping[str, _Cell]: ...
    @property
    def gpus(self) -> Mapping[int, Verdict]: ...


class _Chosen(Protocol):
    @property
    def nodes(self) -> Sequence[str]: ...


class SurveyProposal(Protocol):
    @property
    def chosen(self) -> _Chosen | None: ...
    @property
    def excluded(self) -> Mapping[str, str]: ...


def worst(verdicts: list[Verdict]) -> str:
    """One GPU seen by several checks: fail > could not observe > pass (not run if none)."""
    v = worst_of(verdicts)
    return v.word if v is not None else NOT_RUN


def terminal(grid: Grid, notes: dict[str, str] | None = None, colour: bool = False) -> str:
    notes = notes or {}
    legend = "  ".join(f"{SYMBOL[v]} {v}" for v in ORDER[:4])
    w = max((len(n) for n, _ in grid), default=4)
    gpus = max((len(v) for v in grid.values()), default=0)
    out = [f"rack map (trays x GPUs): {legend}",
           f"{'':<{w}}  tray  " + " ".join(f"{g}" for g in range(gpus))]
    for (node, tray), vs in grid.items():
        cells = " ".join((ANSI[v] + SYMBOL[v] + RESET) if colour else SYMBOL[v] for v in vs)
        note = f"  {notes[node]}" if notes.get(node) else ""
        out.append(f"{node:<{w}}  {tray:>4}  {cells}{note}")
    return "\n".join(out)


def png_map(grid: Grid, notes: dict[str, str] | None = None, title: str = "rack map") -> bytes:
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    notes = notes or {}
    rows = list(grid.items())
    gpus = max((len(v) for _, v in rows), default=1)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * max(1, len(rows))), dpi=100)
    for i, ((node, _tray), vs) in enumerate(rows):
        for g, v in enumerate(vs):
            ax.add_patch(Rectangle((g, i), 0.92, 0.86, color=COLOUR[v], ec="#444444", lw=0.5))
        if notes.get(node):
            ax.text(gpus + 0.2, i + 0.45, notes[node][:70], va="center", fontsize=7)
    ax.set_xlim(0, gpus + 5.5)
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([g + 0.46 for g in range(gpus)], [f"gpu{g}" for g in range(gpus)], fontsize=8)
    ax.set_yticks([i + 0.43 for i in range(len(rows))], [f"{n} (tray {t})" for (n, t), _ in rows], fontsize=8)
    for s in ax.spines.values():
        s.set_visible(False)
    ax.tick_params(length=0)
    ax.set_title(title, fontsize=10)
    ax.legend(handles=[Patch(color=COLOUR[v], label=v) for v in ORDER[:4]], loc="lower right",
              fontsize=7, ncol=4, bbox_to_anchor=(1.0, 1.0 + 0.4 / max(1, len(rows))), frameon=False)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


# --- from a survey ----------------------------------------------------------------------------
def survey_grid(reports: Sequence[SurveyedTray], proposal: SurveyProposal, gpus_per_node: int) -> tuple[Grid, dict[str, str]]:
    """A GPU's own link verdict; a GPU that passed on a tray outside the chosen set is 'excluded'
    (the tray is out for another reason: busy, untuned, another domain, a spare)."""
    chosen = set(proposal.chosen.nodes) if proposal.chosen else set()
    grid: Grid = {}
    notes: dict[str, str] = {}
    for r in reports:
        vs = [r.gpus[g].word if g in r.gpus else NOT_RUN for g in range(gpus_per_node)]
        if r.node not in chosen:
            vs = [EXCLUDED if v == PASS else v for v in vs]
        if r.cells.get("reach") is not None and r.cells["reach"].status is Verdict.UNOBSERVED:
            vs = [UNOBSERVED] * gpus_per_node
        grid[(r.node, r.tray)] = vs
        notes[r.node] = "chosen" if r.node in chosen else proposal.excluded.get(r.node, "")
    return grid, notes


def terminal_survey(reports: Sequence[SurveyedTray], proposal: SurveyProposal, gpus_per_node: int,
                    colour: bool | None = None) -> str:
    import sys
    grid, notes = survey_grid(reports, proposal, gpus_per_node)
    short = {k: v.split(";")[0][:90] for k, v in notes.items()}
    return terminal(grid, short, sys.stdout.isatty() if colour is None else colour)


def png_survey(reports: Sequence[SurveyedTray], proposal: SurveyProposal, gpus_per_node: int, title: str = "survey") -> bytes:
    grid, notes = survey_grid(reports, proposal, gpus_per_node)
    return png_map(grid, {k: v.split(";")[0] for k, v in notes.items()}, title)


# --- from a suite run -------------------------------------------------------------------------


def targets(names: set[str], gpus_per_node: int, nodeid: str) -> list[tuple[str, int]]:
    """The (node, GPU) cells an item's id names: a GPU item its GPU, a node item every GPU of the
    node, a pair item every GPU of both nodes; none for an item that names no node."""
    param = place_of(nodeid)  # PLAT-SHM::node2 -> node2; a hand-written test's [param]
    if not param:
        return []
    gm = re.fullmatch(r"(.+)-card(\d+)", param)
    if gm and gm.group(1) in names:
        g = int(gm.group(2))
        return [(gm.group(1), g)] if g < gpus_per_node else []
    hit = [param] if param in names else [n for n in names if param.startswith(n + "-") and param[len(n) + 1:] in names]
    if hit and param not in names:
        hit.append(param[len(hit[0]) + 1:])
    return [(n, g) for n in hit for g in range(gpus_per_node)]


def run_grid(rack: Rack, outcomes: dict[str, Verdict]) -> Grid:
    """outcomes: item node id -> its verdict, per GPU (targets)."""
    names = {n.name for n in rack.nodes}
    seen: dict[tuple[str, int], list[Verdict]] = {(n.name, g): [] for n in rack.nodes for g in range(rack.gpus_per_node)}
    for nodeid, verdict in outcomes.items():
        for key in targets(names, rack.gpus_per_node, nodeid):
            seen[key].append(verdict)
    return {(n.name, n.tray): [worst(seen[(n.name, g)]) for g in range(rack.gpus_per_node)] for n in rack.nodes}
