"""Plots for the report, where a picture reads faster than a table: PNG bytes to attach.

    from rackgate.report import plots
    evidence.plot("GB/s per pair", plots.bar("read GB/s per pair", ["node1-node2", ...], [5772.0, ...],
                                             unit="GB/s", ref=1800.0, ref_label="floor"))

Every function takes plain lists and returns PNG bytes (matplotlib, Agg backend: no display
needed); evidence.plot() attaches them to the check's Allure result. Bad input (lengths that
differ, no data) raises PlotError with one line naming the problem.
"""
from __future__ import annotations

import io
import math
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, Sequence, TypeGuard

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH_IN, HEIGHT_IN, DPI = 7.0, 3.6, 100
OK, BAD, REF, BAND = "#2e7d32", "#c62828", "#555555", "#90caf9"


class PlotError(ValueError):
    pass


class Moved(Protocol):
    """What fact_moves reads of one regression move (rackgate.baseline.compare.Move; the
    baseline sits above the report and is not imported here)."""
    @property
    def name(self) -> str: ...
    @property
    def where(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def old(self) -> object: ...
    @property
    def new(self) -> object: ...
    @property
    def ok(self) -> bool: ...
    @property
    def band(self) -> tuple[float | None, float | None] | None: ...


def _plt() -> ModuleType:
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=DPI)
    _plt().close(fig)
    return buf.getvalue()


def _check(title: str, labels: Sequence[object], *series: Sequence[object]) -> None:
    if not labels:
        raise PlotError(f"plot {title!r}: no data")
    for s in series:
        if len(s) != len(labels):
            raise PlotError(f"plot {title!r}: {len(labels)} labels but {len(s)} values")
        bad = [v for v in s if v is None or not isinstance(v, (int, float)) or math.isnan(v)]
        if bad:
            raise PlotError(f"plot {title!r}: not numbers: {bad[:3]}")


def _ylabel(ax: Axes, unit: str) -> None:
    if unit:
        ax.set_ylabel(unit)


def bar(title: str, labels: Sequence[str], values: Sequence[float], unit: str = "",
        ref: float | None = None, ref_label: str = "", bad: Sequence[bool] | None = None,
        lower_is_bad: bool = True) -> bytes:
    """One bar per label (GB/s per pair, KV GB per rank). `ref` draws a line (a floor, a
    threshold); bars below it (above it with lower_is_bad=False), or flagged in `bad`, are red."""
    _check(title, labels, values)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))
    if bad is None:
        bad = [ref is not None and ((v < ref) if lower_is_bad else (v > ref)) for v in values]
    ax.bar(range(len(values)), values, color=[BAD if b else OK for b in bad])
    if ref is not None:
        ax.axhline(ref, color=REF, linestyle="--", linewidth=1, label=ref_label or f"{ref:g}")
        ax.legend(loc="lower right", fontsize=8)
    ax.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 6 else 0, ha="right" if len(labels) > 6 else "center",
                  fontsize=8)
    ax.set_title(title, fontsize=10)
    _ylabel(ax, unit)
    return _png(fig)


def grouped(title: str, labels: Sequence[str], series: dict[str, Sequence[float]], unit: str = "") -> bytes:
    """Several bars per label (read / write / bidirectional GB/s per pair)."""
    _check(title, labels, *series.values())
    if not series:
        raise PlotError(f"plot {title!r}: no series")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))
    n = len(series)
    w = 0.8 / n
    for i, (name, vals) in enumerate(series.items()):
        ax.bar([x + (i - (n - 1) / 2) * w for x in range(len(labels))], vals, width=w, label=name)
    ax.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 6 else 0, ha="right" if len(labels) > 6 else "center",
                  fontsize=8)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    _ylabel(ax, unit)
    return _png(fig)


def compare(title: str, labels: Sequence[str], old: Sequence[float], new: Sequence[float], unit: str = "") -> bytes:
    """Baseline against this run, per label (the regression table as a picture)."""
    return grouped(title, labels, {"baseline": old, "this run": new}, unit)


def running(title: str, values: Sequence[float], lo: Sequence[float] | None = None,
            hi: Sequence[float] | None = None, threshold: float | None = None, unit: str = "",
            xlabel: str = "questions") -> bytes:
    """A running figure with its confidence band (GSM8K accuracy after each question), and the
    threshold it is judged against."""
    xs = list(range(1, len(values) + 1))
    _check(title, xs, values, *(s for s in (lo, hi) if s is not None))
    plt = _plt()
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))
    if lo is not None and hi is not None:
        ax.fill_between(xs, lo, hi, color=BAND, alpha=0.5, label="confidence band")
    ax.plot(xs, values, color="#1565c0", linewidth=1.5, label="running value")
    if threshold is not None:
        ax.axhline(threshold, color=BAD, linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    ax.set_xlabel(xlabel)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=10)
    _ylabel(ax, unit)
    return _png(fig)


def compare_band(title: str, labels: Sequence[str], old: Sequence[float], new: Sequence[float],
                 lo: Sequence[float | None], hi: Sequence[float | None], bad: Sequence[bool],
                 unit: str = "") -> bytes:
    """Baseline against this run per label, with the band this run had to stay in (a None
    side is open: a higher-is-better fact has no upper bound). Bars out of the band are red."""
    _check(title, labels, old, new)
    if not (len(lo) == len(hi) == len(bad) == len(labels)):
        raise PlotError(f"plot {title!r}: {len(labels)} labels but {len(lo)}/{len(hi)}/{len(bad)} band entries")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], old, width=0.4, color=REF, label="baseline")
    ax.bar([x + 0.2 for x in xs], new, width=0.4, color=[BAD if b else OK for b in bad], label="this run")
    top = max([*old, *new, *(h for h in hi if h is not None)]) * 1.05 or 1.0
    for x, a, b in zip(xs, lo, hi):
        if a is None and b is None:
            continue
        ax.fill_between([x - 0.45, x + 0.45], a if a is not None else 0.0, b if b is not None else top,
                        color=BAND, alpha=0.35, linewidth=0)
    ax.fill_between([], [], [], color=BAND, alpha=0.35, label="tolerance band")
    ax.set_xticks(list(xs), labels, rotation=45 if len(labels) > 6 else 0, ha="right" if len(labels) > 6 else "center",
                  fontsize=8)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=10)
    _ylabel(ax, unit)
    return _png(fig)


def fact_moves(name: str, moves: Sequence[Moved]) -> bytes | None:
    """The picture of one fact's regression moves (rackgate.baseline.compare.Move): numeric
    facts on both sides only; None when there is nothing to draw (a configuration fact)."""
    def num(v: object) -> TypeGuard[float]:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    pts = [(m, m.old, m.new) for m in moves if num(m.old) and num(m.new)]
    if not pts:
        return None
    ms = [m for m, _, _ in pts]
    bands = [m.band or (None, None) for m in ms]
    return compare_band(f"{name}: baseline vs this run", [m.where or m.name for m in ms], [old for _, old, _ in pts],
                        [new for _, _, new in pts], [b[0] for b in bands], [b[1] for b in bands], [not m.ok for m in ms],
                        unit=ms[0].unit)


def distributions(title: str, series: dict[str, Sequence[float]], unit: str = "") -> bytes:
    """Two or more samples as overlaid histograms on shared bins, each with its mean marked
    (output tokens per answer: the baseline's and this run's)."""
    if not series or any(not s for s in series.values()):
        raise PlotError(f"plot {title!r}: no data")
    for s in series.values():
        _check(title, list(s), s)
    lo = min(min(s) for s in series.values())
    hi = max(max(s) for s in series.values())
    bins = [lo + (hi - lo) * i / 20 for i in range(21)] if hi > lo else 1
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for i, (label, s) in enumerate(series.items()):
        color = f"C{i}"
        mean = sum(s) / len(s)
        ax.hist(list(s), bins=bins, alpha=0.5, color=color, label=f"{label} (n={len(s)}, mean {mean:.4g})")
        ax.axvline(mean, color=color, linestyle="--", linewidth=1)
    ax.set_xlabel(unit or "value")
    ax.set_ylabel("count")
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    return _png(fig)
