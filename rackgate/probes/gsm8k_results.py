"""lm-eval's GSM8K scores, as typed facts (parsed by rackgate/gsm8k/lmeval.py, judged by
rackgate/gates/accuracy.py): the exact_match of each filter, and what the samples file adds
(invalid extractions, degenerate answers)."""
from __future__ import annotations

from dataclasses import dataclass, field

STRICT = "strict-match"       # the filter the reportable number uses
FLEXIBLE = "flexible-extract"


@dataclass(frozen=True)
class Score:
    value: float
    stderr: float | None


@dataclass
class Results:
    task: str
    version: str
    scores: dict[str, Score]       # filter name -> exact_match
    n_samples: int                 # questions scored
    n_original: int                # questions in the test split
    lm_eval_version: str
    path: str
    invalid: int = 0               # strict-match [invalid] extractions (from the samples)
    degenerate: int = 0            # strict-match samples whose response is not language ('!!!!')
    wrong: int = 0                 # strict-match samples scored 0 whose response is language
    samples: int = 0               # strict-match samples read
    sample_path: str = ""
    extras: dict[str, object] = field(default_factory=dict)

    @property
    def strict(self) -> Score:
        return self.scores[STRICT]

    @property
    def invalid_rate(self) -> float:
        return self.invalid / self.samples if self.samples else 0.0


def describe(results: Results) -> str:
    """The run in one line: lm-eval's version, the task, the questions, each filter's score."""
    parts = [f"{name} {sc.value:.4f}" + (f" ± {sc.stderr:.4f}" if sc.stderr is not None else "")
             for name, sc in sorted(results.scores.items(), key=lambda kv: kv[0] != STRICT)]
    n = f"{results.n_samples}/{results.n_original} questions" if results.n_original else f"{results.n_samples} questions"
    inv = f", [invalid] {results.invalid}/{results.samples}" if results.samples else ""
    return f"lm_eval {results.lm_eval_version} {results.task} v{results.version}, {n}: {'; '.join(parts)}{inv}"
