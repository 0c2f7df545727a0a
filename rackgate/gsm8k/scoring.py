"""One response -> what lm-eval scores it, and what actually happened.

lm-eval writes `[invalid]` when its regex finds no number and scores that 0, like a wrong
answer. Here "could not parse" is its own outcome (and an empty answer, the reasoning budget
running out, another), while the score stays lm-eval's: the verdicts agree item by item.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .task import FLEXIBLE, STRICT, Gsm8kTask


class Outcome(str, Enum):
    CORRECT = "correct"    # the extracted number is the answer
    WRONG = "wrong"        # a number was extracted, and it is not the answer
    UNPARSED = "unparsed"  # text came back, the filter found no number (lm-eval: [invalid])
    EMPTY = "empty"        # no text at all (content "" or null: K3's budget ran out mid-thought)


@dataclass(frozen=True)
class FilterVerdict:
    extracted: str      # what lm-eval's filter produced ([invalid] when nothing matched)
    exact_match: float  # lm-eval's score: 1.0 or 0.0
    outcome: Outcome


@dataclass(frozen=True)
class ItemVerdict:
    doc: int                  # index in the test split (lm-eval's doc_id)
    response: str             # the text lm-eval scores
    finish_reason: str | None
    target: str
    filters: dict[str, FilterVerdict] = field(default_factory=dict)
    tokens: int | None = None  # output tokens: the server's usage, else the chunks streamed (quick gate)

    @property
    def strict(self) -> FilterVerdict:
        return self.filters[STRICT]

    @property
    def flexible(self) -> FilterVerdict:
        return self.filters[FLEXIBLE]

    @property
    def passed(self) -> bool:
        """lm-eval's strict-match verdict on this item (what the reportable number counts)."""
        return self.strict.exact_match == 1.0


def outcome(response: str, extracted: str, exact_match: float, fallback: str | None) -> Outcome:
    if exact_match == 1.0:
        return Outcome.CORRECT
    if not response.strip():
        return Outcome.EMPTY
    if fallback is not None and extracted == fallback:
        return Outcome.UNPARSED
    return Outcome.WRONG


def judge(task: Gsm8kTask, doc: int, response: str, finish_reason: str | None = None) -> ItemVerdict:
    fallbacks = task.fallbacks()
    verdicts = {name: FilterVerdict(ext, em, outcome(response, ext, em, fallbacks.get(name)))
                for name, (ext, em) in task.score(doc, response).items()}
    return ItemVerdict(doc, response, finish_reason, task.target(doc), verdicts)
