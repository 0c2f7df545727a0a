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
from typing import Sequence

WIDTH_IN, HEIGHT_IN, DPI = 7.0, 3.6, 100
OK, BAD, REF, BAND = "#2e7d32", "#c62828", "#555555", "#90caf9"


class PlotError(ValueError):
    pass


def _plt():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=DPI)
    _plt().close(fig)
    return buf.getvalue()


def _check(title: str, labels: Sequence, *series: Sequence) -> None:
    if not labels:
        raise PlotError(f"plot {title!r}: no data")
    for s in series:
        if len(s) != len(labels):
            raise PlotError(f"plot {title!r}: {len(labels)} labels but {len(s)} values")
        bad = [v for v in s if v is None or not isinstance(v, (int, float)) or math.isnan(v)]
        if bad:
            raise PlotError(f"plot {title!r}: not numbers: {bad[:3]}")


def _ylabel(ax, unit: str) -> None:
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
