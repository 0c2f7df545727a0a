"""Output length on the quick gate's questions (MLPerf TEST09): the mean and spread of output
tokens per answer, recorded as regression facts, with the per-question counts kept to draw the
two distributions when the mean or spread moves."""
from __future__ import annotations

import statistics

from .scoring import ItemVerdict

PREFIX = "accuracy.output_tokens"


def facts(items: list[ItemVerdict]) -> dict[str, object]:
    """{fact name: value}; empty when no answer carried a token count (nothing to record)."""
    counts = [it.tokens for it in items if it.tokens]
    if not counts:
        return {}
    return {f"{PREFIX}.mean": round(statistics.fmean(counts), 2),
            f"{PREFIX}.stdev": round(statistics.pstdev(counts), 2),
            f"{PREFIX}.per_question": ",".join(map(str, counts))}  # a fact is a scalar: the counts as text


def counts_of(value: object) -> list[int]:
    """The per-question counts back from their fact's text ([] for anything else)."""
    try:
        return [int(x) for x in str(value).split(",")] if value else []
    except ValueError:
        return []


def distribution_of(fact_name: str) -> str | None:
    """The per-question fact drawn beside a mean/spread fact, None for other facts."""
    if fact_name in (f"{PREFIX}.mean", f"{PREFIX}.stdev"):
        return f"{PREFIX}.per_question"
    return None
