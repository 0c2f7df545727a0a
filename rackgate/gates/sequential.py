"""ACC-QUICK's decision, the quick gate's statistics: a truncated Wald sequential test on accuracy.

Each scored question is a Bernoulli trial (lm-eval's strict-match: 1 or 0). The test weighs
H_pass: accuracy = p_pass  against  H_fail: accuracy = p_fail  (p_fail < p_pass)
by the log-likelihood ratio  llr = k*ln(p_pass/p_fail) + (n-k)*ln((1-p_pass)/(1-p_fail)),
and stops the moment it leaves (ln(beta/(1-alpha)), ln((1-beta)/alpha)):
  above: PASS   (a rack at p_fail or worse gets here with probability <= ~alpha)
  below: FAIL   (a rack at p_pass or better gets here with probability <= ~beta)
Between p_fail and p_pass (the indifference zone) either verdict may come; the full lm-eval
run is the arbiter there. A test still undecided after max_n questions decides on the sign of
llr (the accuracy at which a question is worth nothing either way), and says so. When every
question of the data set has been asked, the accuracy is known exactly and is compared with
p_pass. benchmarks/quick_gate_error_rates.py measures the error rates, truncation included.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["pass", "fail"]


@dataclass(frozen=True)
class Decision:
    verdict: Verdict | None  # None: keep asking
    n: int                   # questions scored
    k: int                   # of which correct
    llr: float
    how: str                 # "settled", "question limit", "all questions", ""


@dataclass(frozen=True)
class Sprt:
    p_pass: float
    p_fail: float
    false_pass: float  # alpha
    false_fail: float  # beta
    max_n: int

    def __post_init__(self) -> None:
        if not 0 < self.p_fail < self.p_pass < 1:
            raise ValueError(f"need 0 < p_fail ({self.p_fail}) < p_pass ({self.p_pass}) < 1")
        if not (0 < self.false_pass < 0.5 and 0 < self.false_fail < 0.5):
            raise ValueError("error rates must be in (0, 0.5)")
        if self.max_n < 1:
            raise ValueError("max_n must be at least 1")

    @property
    def upper(self) -> float:
        return math.log((1 - self.false_fail) / self.false_pass)

    @property
    def lower(self) -> float:
        return math.log(self.false_fail / (1 - self.false_pass))

    @property
    def step_correct(self) -> float:
        return math.log(self.p_pass / self.p_fail)

    @property
    def step_wrong(self) -> float:
        return math.log((1 - self.p_pass) / (1 - self.p_fail))

    @property
    def neutral(self) -> float:
        """The accuracy at which a question moves llr by nothing on average (sign at truncation)."""
        return -self.step_wrong / (self.step_correct - self.step_wrong)

    def llr(self, n: int, k: int) -> float:
        return k * self.step_correct + (n - k) * self.step_wrong

    @property
    def fastest_fail(self) -> int:
        """Wrong answers in a row that settle FAIL: how fast a broken server is failed."""
        return math.ceil(self.lower / self.step_wrong)

    @property
    def fastest_pass(self) -> int:
        return math.ceil(self.upper / self.step_correct)

    def decide(self, n: int, k: int, population: int | None = None) -> Decision:
        llr = self.llr(n, k)
        if llr >= self.upper:
            return Decision("pass", n, k, llr, "settled")
        if llr <= self.lower:
            return Decision("fail", n, k, llr, "settled")
        if population is not None and n >= population:
            return Decision("pass" if k / n >= self.p_pass else "fail", n, k, llr, "all questions")
        if n >= self.max_n:
            return Decision("pass" if llr >= 0 else "fail", n, k, llr, "question limit")
        return Decision(None, n, k, llr, "")
