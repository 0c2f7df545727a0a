"""Judgments of the ACC rows over lm-eval's scores: facts in, findings out (empty: healthy)."""
from __future__ import annotations

from ..probes.gsm8k_results import Results


def degenerate_share(results: Results) -> str:
    """The answers that are not language, apart from the wrong ones ('' when none): the server's
    fault, not the model's accuracy. lm-eval sends no DP rank hint, so no rank is named."""
    if not results.degenerate:
        return ""
    n = results.samples
    return (f"{results.degenerate} of {n} answers degenerate ('!!!!', one token repeated), apart from "
            f"{results.wrong} coherent wrong answers: "
            + ("every answer: the whole server" if results.degenerate == n else
               "some ranks answer and some do not (a node- or rank-specific cause; lm-eval sends no rank hint, so "
               "which rank is not known: SRV-SANITY names it)"))


def judge(results: Results, cfg) -> list[str]:
    """Why the run fails ACC-GSM8K (empty: it passes)."""
    why = []
    s = results.strict
    if s.value < cfg.floor:
        why.append(f"strict-match {s.value:.4f} < {cfg.floor:.4f} (expected {cfg.expected:.4f} - tolerance "
                   f"{cfg.tolerance:.4f})")
    if results.samples and results.invalid_rate > cfg.max_invalid_rate:
        why.append(f"[invalid] extractions {results.invalid}/{results.samples} ({results.invalid_rate:.1%}) > "
                   f"{cfg.max_invalid_rate:.1%}: the answers lost the '#### N' line")
    return why
