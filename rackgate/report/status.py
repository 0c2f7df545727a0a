"""`rackgate status [VERDICT.json | RESULTS_DIR]... [--image DIGEST] [--now TIME]`: what stands now,
per rack, node and GPU, from verdict files (the last run's, `rackgate watch`'s, or a fleet's results
directory: every rack's): green, failed, unobserved, or expired (rackgate/report/validity.py); beside a
watch's state (its history.jsonl), the items that flap.

    rack sim-4x4 (reports/verdict.json): FAILED -- 60 green, 1 failed, 0 unobserved, 3 expired
      node    tray  gpu 0 1 2 3
      node1      1      # # # #  green (17)
      node2      2      # X # #  failed FAB-STATE [node2/card1] accel_state=unconfigured ...
      rack-wide         green (9)
      legend: # green  X failed  ? unobserved  ~ expired  (blank) nothing judged there

Exit code: 0 everything judged is green, 1 something failed, 3 nothing failed but something is
unobserved or expired (or nothing was judged), 2 a file that is not a verdict (one line).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import ids
from . import rackmap, validity

GREEN, FAILED, UNOBSERVED, EXPIRED = validity.GREEN, validity.FAILED, validity.UNOBSERVED, validity.EXPIRED
ORDER = (FAILED, UNOBSERVED, EXPIRED, GREEN)   # worst first
SYMBOL = {GREEN: "#", FAILED: "X", UNOBSERVED: "?", EXPIRED: "~", "": " "}
_RANK = re.compile(r"(.+)-dp(\d+)")


@dataclass(frozen=True)
class Place:
    """Where an item judged: node ("" rack-wide), GPU (None: not one GPU), DP rank (None: none)."""
    node: str = ""
    gpu: int | None = None
    rank: int | None = None
    gpus: tuple[int, ...] = ()   # every GPU it covers (a node's, a pair's nodes')
    nodes: tuple[str, ...] = ()  # every node it covers (both of a pair)


def place_of(nodeid: str, names: set[str], gpus_per_node: int) -> Place:
    """An item id's place: ROW::node2-card1 a GPU, ROW::node2 a node, ROW::node1-node2 a pair (both
    nodes), ROW::node3-dp9 a DP rank on node3, ROW::server a rack-wide item (ids.place_of: a
    hand-written test's [param] alike)."""
    m = _RANK.fullmatch(ids.place_of(nodeid))
    if m and m.group(1) in names:
        return Place(m.group(1), None, int(m.group(2)), (), (m.group(1),))
    cells = rackmap.targets(names, gpus_per_node, nodeid)
    nodes = tuple(dict.fromkeys(n for n, _ in cells))
    if not nodes:
        return Place()
    gpu = cells[0][1] if len(cells) == 1 else None
    return Place(nodes[0] if len(nodes) == 1 else "-".join(nodes), gpu, None,
                 tuple(g for _, g in cells), nodes)


def worst(states: Iterable[str]) -> str:
    got = set(states)
    return next((s for s in ORDER if s in got), "")


@dataclass
class _Where:
    states: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)

    def add(self, st: str, item: Mapping[str, Any]) -> None:
        self.states.append((st, item))

    def line(self) -> str:
        if not self.states:
            return "nothing judged"
        w = worst(s for s, _ in self.states)
        bad = [(s, i) for s, i in self.states if s == w]
        if w == GREEN:
            return f"green ({len(self.states)})"
        head = f"{w} ({len(bad)} of {len(self.states)})"
        return head + ": " + "; ".join(_describe(s, i) for s, i in bad[:3]) + (" ..." if len(bad) > 3 else "")


def _describe(st: str, it: Mapping[str, Any]) -> str:
    name = ids.short(str(it["test"]))
    if st == FAILED:
        return f"{it.get('row') or name} [{it.get('where', '')}] {' '.join(str(it.get('seen', '')).split())[:100]}"
    if st == EXPIRED:
        return f"{name} (valid until {it.get('valid_until') or 'never stamped'})"
    return f"{name}: {' '.join(str(it.get('seen', '')).split())[:100]}"


def render(verdict: Mapping[str, Any], now: datetime, image: str = "", source: str = "") -> tuple[str, str]:
    """(the text for one verdict file, its worst state)."""
    items = verdict.get("items", [])
    image = image or validity.current_image(items)
    nodes = verdict.get("nodes", [])
    names = {n["node"] for n in nodes}
    gpus_per_node = max((len(n["gpus"]) for n in nodes), default=0)
    cells: dict[tuple[str, int], list[str]] = {}
    per_node = {n: _Where() for n in names}
    rack = _Where()
    counts = dict.fromkeys(ORDER, 0)
    for it in items:
        st = validity.state(it, now, image)
        counts[st] += 1
        p = place_of(str(it["test"]), names, gpus_per_node)
        for n in p.nodes:
            per_node[n].add(st, it)
            for g in (p.gpus if p.rank is None else ()):
                cells.setdefault((n, g), []).append(st)
        if not p.nodes:
            rack.add(st, it)
    overall = worst(s for s, n in counts.items() if n) if items else UNOBSERVED
    for u in verdict.get("rack_unknown", []):   # a run that left no items: its why
        if not items:
            rack.add(UNOBSERVED, {"test": u["test"], "seen": u["why"]})
    where = f" ({source})" if source else ""
    head = (f"rack {verdict.get('rack', '?')}{where}: {overall.upper()} -- "
            + ", ".join(f"{counts[s]} {s}" for s in (GREEN, FAILED, UNOBSERVED, EXPIRED))
            + (f"; image {image[:19]}" if image else ""))
    w = max([len(n) for n in names] + [9])
    out = [head, f"  {'node':<{w}}  tray  gpu " + " ".join(str(g) for g in range(gpus_per_node))]
    for n in nodes:
        gs = " ".join(SYMBOL[worst(cells.get((n["node"], g), []))] for g in range(gpus_per_node))
        out.append(f"  {n['node']:<{w}}  {n['tray']:>4}      {gs}  {per_node[n['node']].line()}")
    out.append(f"  {'rack-wide':<{w}}        {' ' * (2 * gpus_per_node - 1)}  {rack.line()}")
    out.append("  legend: # green  X failed  ? unobserved  ~ expired  (blank) nothing judged there")
    return "\n".join(out), overall


EXIT = {GREEN: 0, FAILED: 1, UNOBSERVED: 3, EXPIRED: 3}
FLAP_WINDOW, FLAP_CHANGES = 10, 2   # an item whose outcome changed this often in its last judgments


def flapping(history: Iterable[Mapping[str, Any]], window: int = FLAP_WINDOW, changes: int = FLAP_CHANGES) -> list[str]:
    """`rackgate watch`'s history (history.jsonl's records) -> a line per item whose outcome changed
    at least `changes` times in its last `window` judgments: 'test_x[node2-card1]: PASS FAIL PASS FAIL'."""
    seq: dict[str, list[str]] = {}
    for rec in history:
        if "test" in rec and "outcome" in rec:
            seq.setdefault(str(rec["test"]), []).append(str(rec["outcome"]))
    out = []
    for test, outcomes in seq.items():
        last = outcomes[-window:]
        if sum(a != b for a, b in zip(last, last[1:])) >= changes:
            out.append(f"{ids.short(test)}: {' '.join(last)}")
    return out


def read_history(path: Path) -> list[dict[str, Any]]:
    """history.jsonl's records (a line a crash cut is passed over); [] when there is none."""
    out = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def sources(paths: list[str]) -> list[Path]:
    """Verdict files named, or found in a directory: its verdict.json, or a fleet's racks'."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir() and (p / "fleet.json").exists():
            fleet = json.loads((p / "fleet.json").read_text())
            out += [Path(r["results"]) / "verdict.json" for r in fleet.get("racks", [])]
        elif p.is_dir():
            out.append(p / "verdict.json")
        else:
            out.append(p)
    return out


def main(argv: list[str] | None = None) -> int:
    from . import verdict_file
    ap = argparse.ArgumentParser(prog="rackgate status", description="what stands now, per rack, node and GPU")
    ap.add_argument("paths", nargs="*", default=["reports/verdict.json"], metavar="VERDICT.json|DIR")
    ap.add_argument("--image", default="", help="the image running now (default: the newest an item recorded)")
    ap.add_argument("--now", default="", metavar="TIME", help="judge expiry at this RFC 3339 time (default: now)")
    try:
        o = ap.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    now = validity.when(o.now) if o.now else datetime.now(timezone.utc)
    if now is None:
        print(f"rackgate status: --now {o.now!r}: not an RFC 3339 time with a zone (2026-12-07T19:00:00Z)", file=sys.stderr)
        return 2
    states = []
    try:
        for path in sources(o.paths):
            text, st = render(verdict_file.read(path), now, o.image, str(path))
            print(text)
            flaps = flapping(read_history(path.with_name("history.jsonl")))
            if flaps:
                print(f"  flapping (outcome changed {FLAP_CHANGES}+ times in the last {FLAP_WINDOW} judgments, history.jsonl):")
                print("\n".join(f"    {f}" for f in flaps))
            states.append(st)
    except (ValueError, OSError, KeyError, TypeError) as e:
        print(f"rackgate status: {e}", file=sys.stderr)
        return 2
    return max((EXIT[s] for s in states), default=3)
