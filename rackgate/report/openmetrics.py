"""The verdict where fleets look: a metrics file for node_exporter's textfile collector
(`--collector.textfile.directory`), in the Prometheus text format that is also valid OpenMetrics
(gauges, no timestamps -- the collector refuses them -- and a final `# EOF`), written atomically (a
temporary file in the same directory, renamed over the old one: the collector never reads half a
file).

    rackgate_check_status{rack,node,gpu,rank,row}              1 pass, 0 fail, -1 could not observe
    rackgate_check_valid_until_seconds{rack,node,gpu,rank,row} when it expires (unix seconds)
    rackgate_check_judged_seconds{rack,node,gpu,rank,row}      when it was judged
    rackgate_gpu_hardware_errors{rack,node,gpu,kind}          the GPUs' error counters as last read
                                                               (amdgpu ras/*_err_count, bad pages, AER, PCIe replay)
    rackgate_last_run_duration_seconds{rack}                   the last run's wall time
    rackgate_last_run_timestamp_seconds{rack}                  when this file was written

`node` is the item's node ("node1-node2" for a pair, "" rack-wide), `gpu` its GPU index ("" when the
item is not one GPU's), `rank` its DP rank ("" when none). Items that share a label set (two checks
of one row at one place) are one series: the worst status, the earliest valid_until.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import validity
from .status import place_of

STATUS = {"PASS": 1, "FAIL": 0, "UNKNOWN": -1}
_RANKING = {0: 0, -1: 1, 1: 2}   # fail worst, then could not observe, then pass
LABELS = ("rack", "node", "gpu", "rank", "row")

HELP = {
    "rackgate_check_status": "rackgate check verdict: 1 pass, 0 fail (a finding), -1 could not observe",
    "rackgate_check_valid_until_seconds": "unix time until which the check's verdict stands (its catalogue row's validity)",
    "rackgate_check_judged_seconds": "unix time the check was judged",
    "rackgate_gpu_hardware_errors": "a GPU hardware error counter as rackgate last read it",
    "rackgate_last_run_duration_seconds": "wall time of rackgate's last run",
    "rackgate_last_run_timestamp_seconds": "unix time this file was written",
}


def _escape(v: str) -> str:
    """The text format's escapes (backslash, newline, double quote); any other control character a space."""
    v = v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return "".join(c if c.isprintable() else " " for c in v)


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _seconds(stamp: str) -> float | None:
    t = validity.when(stamp)
    return t.timestamp() if t is not None else None


def _number(v: float) -> str:
    return str(int(v)) if math.isfinite(v) and float(v).is_integer() else repr(float(v))


def render(verdict: Mapping[str, Any], counters: Iterable[Mapping[str, Any]] = (), duration_s: float | None = None,
           written_at: float | None = None) -> str:
    """The file's text for a verdict (verdict.json's shape) and counters ({node, gpu, counter, value})."""
    rack = str(verdict.get("rack", ""))
    nodes = verdict.get("nodes", [])
    names = {n["node"] for n in nodes}
    gpus = max((len(n["gpus"]) for n in nodes), default=0)
    series: dict[tuple[str, ...], tuple[int, float | None, float | None]] = {}
    for it in verdict.get("items", []):
        if str(it.get("test", "")).startswith("("):   # a run's own entry ("(tier quick)"), not a check
            continue
        p = place_of(str(it["test"]), names, gpus)
        key = (rack, p.node, "" if p.gpu is None else str(p.gpu), "" if p.rank is None else str(p.rank), str(it.get("row", "")))
        st = STATUS.get(str(it.get("outcome")), -1)
        until, judged = _seconds(str(it.get("valid_until", ""))), _seconds(str(it.get("judged_at", "")))
        if key in series:
            old = series[key]
            st = min(old[0], st, key=_RANKING.__getitem__)
            until = min((u for u in (old[1], until) if u is not None), default=None)
            judged = min((j for j in (old[2], judged) if j is not None), default=None)
        series[key] = (st, until, judged)
    out: list[str] = []

    def family(name: str, rows: list[str]) -> None:
        out.extend([f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge", *rows])

    ordered = sorted(series.items())
    family("rackgate_check_status", [f"rackgate_check_status{_labels(zip(LABELS, k))} {v[0]}" for k, v in ordered])
    family("rackgate_check_valid_until_seconds", [f"rackgate_check_valid_until_seconds{_labels(zip(LABELS, k))} {_number(v[1])}"
                                                  for k, v in ordered if v[1] is not None])
    family("rackgate_check_judged_seconds", [f"rackgate_check_judged_seconds{_labels(zip(LABELS, k))} {_number(v[2])}"
                                             for k, v in ordered if v[2] is not None])
    seen: dict[tuple[str, str, str], int] = {}
    for c in counters:
        seen[(str(c["node"]), str(c["gpu"]), str(c["counter"]))] = int(c["value"])
    hw = "rackgate_gpu_hardware_errors"
    family(hw, [f"{hw}{_labels((('rack', rack), ('node', n), ('gpu', g), ('kind', c)))} {v}"
                for (n, g, c), v in sorted(seen.items())])
    one = _labels([("rack", rack)])
    if duration_s is not None:
        family("rackgate_last_run_duration_seconds", [f"rackgate_last_run_duration_seconds{one} {duration_s:.3f}"])
    if written_at is not None:
        family("rackgate_last_run_timestamp_seconds", [f"rackgate_last_run_timestamp_seconds{one} {written_at:.3f}"])
    return "\n".join(out) + "\n# EOF\n"


def write(path: Path, text: str) -> None:
    """Atomically: a temporary file beside it (not matching the collector's *.prom), then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# The GPUs' error counters a run read, beside its verdict file (`<verdict>.counters.json`): what the
# metrics' rackgate_gpu_hardware_errors shows (rackgate/hooks/metrics.py writes it; rackgate watch keeps
# the newest beside its state's verdict).
COUNTERS_FORMAT = "rackgate-counters/1"


def counters_path(verdict: Path) -> Path:
    return verdict.with_name(verdict.stem + ".counters.json")


def write_counters(verdict: Path, counters: list[dict[str, Any]]) -> None:
    write(counters_path(verdict), json.dumps({"format": COUNTERS_FORMAT, "counters": counters}, indent=1) + "\n")


def read_counters(verdict: Path) -> list[dict[str, Any]]:
    """The counters beside a verdict file ([] when none or unreadable)."""
    try:
        data = json.loads(counters_path(verdict).read_text())
    except (OSError, json.JSONDecodeError):
        return []
    return list(data.get("counters", [])) if isinstance(data, dict) and data.get("format") == COUNTERS_FORMAT else []
