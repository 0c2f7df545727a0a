"""The run-level files of the Allure results directory, written at the end of a session:

- environment.properties: what was tested (image, ATOM path, rack, silicon, HBM, nodes);
- categories.json: hardware verdicts (a catalogue check failed: the message starts with a row
  id) apart from suite errors (could not observe, broken) and from checks that failed without a
  verdict (a bug in a check). Allure 2 reads this file; Allure 3 takes the same rules from the
  config that rackgate.report.render writes;
- every test result by row (by_row): its title path rack -> area -> row -> place (Allure 3's tree;
  the suites labels say the same for Allure 2: rackgate/fixtures/labels.py), a declared check's
  title its row, place and the row's title (`PLAT-SHM [node2] no stale shared-memory segments`),
  never the module file;
- <uuid>-globals.json + PNG attachments: plots of the facts the run recorded (GB/s per pair, KV
  per rank, ...), shown with the report as a whole rather than with one test.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence

from ..secrets import redact
from . import plots

if TYPE_CHECKING:
    from ..config import Rack


class RecordedFact(Protocol):
    """What the run-level files read of a recorded fact (rackgate.baseline.Fact; the baseline
    sits above the report and is not imported here)."""
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> object: ...
    @property
    def where(self) -> str: ...
    @property
    def unit(self) -> str: ...

# Regexes that mean the same in Java (Allure 2: whole-message match) and JavaScript (Allure 3:
# search): no inline flags, [\s\S] for "anything including newlines".
_ANY = r"[\s\S]*"
VERDICT_RE = _ANY + r"CheckFailed: [A-Z]+-[A-Z0-9-]+ \[" + _ANY
SUITE_RE = _ANY + r"(CouldNotObserve|TransportError|CommandTimeout|ServerError|BootFailed|could not observe)" + _ANY

CATEGORIES = [
    {"id": "rack-verdict", "name": "Rack verdicts (a catalogue check failed)",
     "matchedStatuses": ["failed"], "messageRegex": VERDICT_RE},
    {"id": "could-not-observe", "name": "Suite could not observe (node, tool or server unreachable)",
     "matchedStatuses": ["broken", "failed"], "messageRegex": SUITE_RE},
    {"id": "suite-error", "name": "Suite errors (a bug in the suite or a check: traceback)",
     "matchedStatuses": ["broken"]},
    {"id": "check-without-verdict", "name": "Checks that failed without a catalogue verdict",
     "matchedStatuses": ["failed"]},
]


def environment(rack: Rack, facts: Sequence[RecordedFact], selection: str = "") -> dict[str, str]:
    """environment.properties entries for a rack (the built one: nodes filled in)."""
    hbm = sorted({f"{f.value:g}" if isinstance(f.value, (int, float)) else str(f.value)
                  for f in facts if "hbm" in f.name.lower()})
    props = {
        "rack": rack.name,
        "image": rack.image or "(not set in the rack file)",
        "atom_path": rack.atom_path or "(not set in the rack file)",
        "silicon": rack.silicon,
        "hbm_gib": ", ".join(hbm) if hbm else (f"{rack.platform.hbm_gib:g} (rack file)"
                                               if rack.platform.hbm_gib else "(not recorded)"),
        "nodes": ", ".join(f"{n.name} (tray {n.tray}, {n.data_ip})" for n in rack.nodes) or "(none)",
        "gpus_per_node": str(rack.gpus_per_node),
        "served_model": rack.server.served_model,
        "container": rack.container,
        "selection": selection or "(all)",
    }
    if rack.server.attach_url:
        props["attached_to"] = rack.server.attach_url
    if rack.sim is not None:
        props["simulated"] = "yes: faults " + (", ".join(rack.sim.faults) or "none")
    return props


def _prop_escape(text: str, key: bool = False) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    if key:
        text = re.sub(r"([=: ])", r"\\\1", text)
    return text


def write_environment(results: Path, props: dict[str, str]) -> Path:
    body = "".join(f"{_prop_escape(k, True)}={_prop_escape(redact(str(v)))}\n" for k, v in props.items())
    return _atomic(results / "environment.properties", body.encode())


def row_heading(row_id: str, title: str) -> str:
    """A row as the report's tree and titles name it: `PLAT-SHM no stale shared-memory segments`."""
    return f"{row_id} {title}"


def by_row(results: Path) -> int:
    """Every test result of a catalogue row (its `story` label) titled by row: its title path
    [rack, area, row heading] (the parentSuite, suite and subSuite labels), and a declared check's
    item (its fullName `ROW#place`) named `ROW [place] <the row's title>`. Re-runnable (a result
    already titled stays); returns how many results it rewrote."""
    n = 0
    for f in sorted(results.glob("*-result.json")):
        try:
            body = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        labels = {lab.get("name"): lab.get("value") for lab in body.get("labels", [])}
        row_id, heading = labels.get("story"), labels.get("subSuite")
        if not row_id or not heading:
            continue
        path = [v for v in (labels.get("parentSuite"), labels.get("suite"), heading) if v]
        package, _, place = str(body.get("fullName", "")).partition("#")
        name = f"{row_id} [{place}] {heading.removeprefix(row_id).strip()}" if package == row_id else body.get("name")
        if body.get("titlePath") != path or body.get("name") != name:
            body["titlePath"], body["name"] = path, name
            _atomic(f, json.dumps(body).encode())
            n += 1
    return n


def write_categories(results: Path) -> Path:
    return _atomic(results / "categories.json", json.dumps(CATEGORIES, indent=1).encode())


def fact_plots(facts: Sequence[RecordedFact]) -> list[tuple[str, bytes]]:
    """One plot per fact family with several places: "fabric.bw.read/write/bidir" per pair as
    grouped bars, "srv.kv.available_gb" per rank as bars."""
    numeric = [(f, f.value) for f in facts if isinstance(f.value, (int, float)) and not isinstance(f.value, bool) and f.where]
    families: dict[str, dict[str, dict[str, float]]] = {}
    units: dict[str, str] = {}
    for f, value in numeric:
        fam, _, leaf = f.name.rpartition(".")
        fam = fam or leaf
        families.setdefault(fam, {}).setdefault(leaf, {})[f.where] = float(value)
        units.setdefault(fam, f.unit)
    out: list[tuple[str, bytes]] = []
    for fam, series in sorted(families.items()):
        wheres = sorted({w for s in series.values() for w in s})
        if len(wheres) < 2:
            continue
        # Series measured at the same places go in one chart; the others each get their own.
        full = {leaf: s for leaf, s in series.items() if set(s) == set(wheres)}
        if len(full) > 1:
            title = f"{fam}: {' / '.join(full)} ({units[fam]})" if units[fam] else f"{fam}: {' / '.join(full)}"
            out.append((title, plots.grouped(title, wheres, {k: [v[w] for w in wheres] for k, v in full.items()},
                                             units[fam])))
            rest = {k: v for k, v in series.items() if k not in full}
        else:
            rest = series
        for leaf, s in sorted(rest.items()):
            ws = sorted(s)
            if len(ws) < 2:
                continue
            name = f"{fam}.{leaf}" if leaf != fam else fam
            title = f"{name} ({units[fam]})" if units[fam] else name
            out.append((title, plots.bar(title, ws, [s[w] for w in ws], units[fam])))
    return out


def write_globals(results: Path, attachments: list[tuple[str, bytes, str]],
                  errors: list[dict[str, str]] | None = None) -> Path | None:
    """Report-level attachments (name, body, mime type) and errors ({"message", "trace"}): an Allure 3
    globals file."""
    if not attachments and not errors:
        return None
    entries = []
    now = int(time.time() * 1000)
    for name, body, mime in attachments:
        ext = {"image/png": "png", "text/plain": "txt", "text/csv": "csv"}.get(mime, "bin")
        source = f"{uuid.uuid4()}-attachment.{ext}"
        _atomic(results / source, body)
        entries.append({"name": name, "source": source, "type": mime, "timestamp": now})
    return _atomic(results / f"{uuid.uuid4()}-globals.json",
                   json.dumps({"attachments": entries, "errors": errors or []}, indent=1).encode())


def _atomic(path: Path, body: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(body)
    tmp.replace(path)
    return path
