"""Judgments of the ACC rows over the GSM8K runs (rackgate/probes/acc.py `quick`, `under_load`,
`full`: the runs of the subject layer above, rackgate/gsm8k, read as plain data), and their
declarations: one item per server each, with the long timeout their runs are bounded by.

Each read's hangs are judged first, as every request-sending check's are (gates/srv.py
`hang_finding`): every rank asked once before the questions and a rank not answering is
SRV-DEADLOCK's FAILED naming the asking row; the questions' hang (or a mid-run look at lm-eval
that finds a rank not answering) is the asking row's FAILED cross-referenced to SRV-DEADLOCK.
Degenerate answers are SRV-SANITY's finding, named by the asking row."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..config.accuracy import AccuracyExpect
from ..config.model import Rack
from ..errors import CouldNotObserve, NotRun
from ..probes import acc
from ..probes.gsm8k_results import Results, describe
from .declare import Check, Fact, Shown, declare
from .srv import finding_at, hang_finding


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


def judge(results: Results, cfg: AccuracyExpect) -> list[str]:
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


@dataclass(frozen=True)
class Agreement:
    quick: float
    quick_n: int
    loaded: float
    loaded_n: int
    z: float

    @property
    def se(self) -> float:
        p = (self.quick * self.quick_n + self.loaded * self.loaded_n) / max(1, self.quick_n + self.loaded_n)
        return math.sqrt(p * (1 - p) * (1 / max(1, self.quick_n) + 1 / max(1, self.loaded_n)))

    @property
    def falls(self) -> bool:
        """The accuracy under load is below the quick gate's beyond z standard errors."""
        drop = self.quick - self.loaded
        return drop > 0 and drop > self.z * self.se

    def describe(self) -> str:
        return (f"accuracy under load {self.loaded:.3f} ({self.loaded_n} questions) against the quick gate's "
                f"{self.quick:.3f} ({self.quick_n} questions): difference {self.quick - self.loaded:+.3f}, "
                f"allowed {self.z:g} x {self.se:.3f} = {self.z * self.se:.3f}")


def _hangs(q: acc.Quick, row: str) -> list[str]:
    """The quick gate's run's hangs, as `row` reads them (its could-not-observe raised); [] when
    the run read the questions' answers."""
    if q.pre_hang is not None:
        return hang_finding(row, q.pre_hang.seen, q.pre_hang.where)
    if q.hang is not None:
        return hang_finding(row, q.hang.seen, q.hang.where,
                            own=f"{q.scored} of the quick gate's GSM8K questions scored before the hang")
    if q.result is None:
        raise CouldNotObserve(q.blind or "the quick gate's run read nothing")
    return []


def _quick_shown(q: acc.Quick, row: str) -> list[Shown]:
    out = [Shown(f"{row}: every rank asked once (the quick gate's run)", q.pre)] if q.pre else []
    for h in (q.pre_hang, q.hang):
        out += [Shown(title, text) for title, text in (h.shown if h is not None else ())]
    return out


# --- ACC-QUICK ------------------------------------------------------------------------------------
def quick_passes(q: acc.Quick, rack: Rack, where: str) -> list[str]:
    """The quick gate's sequential test settled PASS; degenerate answers are SRV-SANITY's finding
    (where they came from: the broken ranks, else the server), not the model's accuracy."""
    hung = _hangs(q, "ACC-QUICK")
    if hung:
        return hung
    r = q.result
    assert r is not None
    degenerate = r.degenerate_line()
    if degenerate:
        return finding_at("SRV-SANITY", r.broken() or where, f"ACC-QUICK: {degenerate}; {r.summary()}; e.g. "
                          + " | ".join(r.examples()))
    if r.decision.verdict == "pass":
        return []
    return [r.summary() + "; " + r.diagnosis() + "; e.g. " + " | ".join(r.examples())]


def quick_shown(q: acc.Quick, rack: Rack) -> list[Shown]:
    out = _quick_shown(q, "ACC-QUICK")
    r = q.result
    if r is not None:
        out += [Shown("quick gate", r.summary() + "\n" + "\n".join(r.examples(10))),
                Shown("per question: doc, strict-match outcome, extracted, finish_reason", r.per_question())]
    return out


def quick_facts(q: acc.Quick, key: str) -> list[Fact]:
    """The quick gate's accuracy and its output length (MLPerf TEST09), rack-wide."""
    r = q.result
    if r is None:
        return []
    return [Fact("accuracy.gsm8k.quick", round(r.accuracy(), 4), where="rack")] + [
        Fact(name, value, "tokens", "rack") for name, value in r.length_facts().items()
        if isinstance(value, (int, float, str, bool))]


# --- ACC-UNDER-LOAD -------------------------------------------------------------------------------
def under_load_agrees(u: acc.UnderLoad, rack: Rack, where: str) -> list[str]:
    """The accuracy under load agrees with the quick gate's (`Agreement`), whatever the quick gate's
    verdict (catalogue `reads`); not run when the quick gate found degenerate answers (no model
    accuracy to compare with: ACC-QUICK names SRV-SANITY)."""
    hung = _hangs(u.quick, "ACC-UNDER-LOAD")
    if hung:
        return hung
    r = u.quick.result
    assert r is not None
    degenerate = r.degenerate_line()
    if degenerate:
        raise NotRun("ACC-QUICK", f"found degenerate answers (SRV-SANITY): {degenerate}")
    if u.pre_hang is not None:
        return hang_finding("ACC-UNDER-LOAD", u.pre_hang.seen, u.pre_hang.where)
    if u.hang is not None:
        return hang_finding("ACC-UNDER-LOAD", u.hang.seen, u.hang.where,
                            own=f"{u.scored} GSM8K questions scored under load before the hang; {u.fillers}")
    if u.blind or not u.ran:
        raise CouldNotObserve(u.blind or "the questions under load were not asked")
    if not u.fillers_answered:
        raise CouldNotObserve(f"no filler request was answered ({u.fillers}): the server was not under load")
    a = _agreement(u, rack)
    return ["accuracy falls under load: " + a.describe() + "; " + u.fillers] if a.falls else []


def _agreement(u: acc.UnderLoad, rack: Rack) -> Agreement:
    r = u.quick.result
    assert r is not None
    return Agreement(r.accuracy(), len(r.items), u.correct / max(1, u.asked), u.asked, rack.accuracy.under_load_z)


def under_load_shown(u: acc.UnderLoad, rack: Rack) -> list[Shown]:
    out = _quick_shown(u.quick, "ACC-UNDER-LOAD")
    if u.pre:
        out.append(Shown("ACC-UNDER-LOAD: every rank asked once", u.pre))
    for h in (u.pre_hang, u.hang):
        out += [Shown(title, text) for title, text in (h.shown if h is not None else ())]
    if u.ran and u.quick.result is not None and u.asked:
        out.append(Shown("under load", _agreement(u, rack).describe() + "\n" + u.fillers + "\n" + u.per_question))
    return out


# --- ACC-GSM8K ------------------------------------------------------------------------------------
def full_passes(f: acc.Full, rack: Rack, where: str) -> list[str]:
    """lm-eval's strict-match accuracy within tolerance of the expected, and its answers keeping the
    '#### N' line. Read first: every rank asked once before lm-eval (a rank not answering:
    SRV-DEADLOCK's, naming ACC-GSM8K); a mid-run look that found a rank not answering (this row's
    FAILED cross-referenced to SRV-DEADLOCK); lm-eval's own request timed out while every rank
    answered (this row's FAILED naming the share); degenerate answers (SRV-SANITY's)."""
    if f.pre_hang is not None:
        return hang_finding("ACC-GSM8K", f.pre_hang.seen, f.pre_hang.where)
    if f.look_hang is not None:
        return hang_finding("ACC-GSM8K", f.look_hang.seen, f.look_hang.where, own=f.stalled)
    if f.late:
        return [f"{f.stalled}, while every rank answered a short request within {f.slowest_s:.1f}s ({f.routing}): "
                f"{f.unanswered} questions not answered and at least one request in flight past its bound "
                "(SRV-DEADLOCK's signature: a rank that takes requests and does not answer them; lm-eval sends no "
                "rank hint, so which rank is not known: see SRV-DEADLOCK)"]
    if f.results is None:
        raise CouldNotObserve(f.blind or "lm_eval read nothing")
    rehearsal = f" (a --limit {f.limit} rehearsal, not the reportable number)" if f.limit else ""
    broken = degenerate_share(f.results)
    if broken:  # the server's fault, not the model's accuracy: SRV-SANITY's reading, named here
        return finding_at("SRV-SANITY", where, f"ACC-GSM8K: {broken}; {describe(f.results)}{rehearsal}")
    why = judge(f.results, rack.accuracy)
    return [f"{describe(f.results)}{rehearsal}: {'; '.join(why)}"] if why else []


def full_shown(f: acc.Full, rack: Rack) -> list[Shown]:
    out = [Shown("lm_eval command", f.command)] if f.command else []
    if f.pre:
        out.append(Shown("ACC-GSM8K: every rank asked once", f.pre))
    if f.look:
        out.append(Shown("ACC-GSM8K: every rank asked once (lm-eval stalled)", f.look))
    for h in (f.pre_hang, f.look_hang):
        out += [Shown(title, text) for title, text in (h.shown if h is not None else ())]
    if f.tail:
        out.append(Shown("lm_eval log (last lines)", f.tail))
    if f.results is not None:
        out.append(Shown("lm_eval results", f"{describe(f.results)}\nresults: {f.results.path}\n"
                                            f"samples: {f.results.sample_path}"))
    return out


def full_facts(f: acc.Full, key: str) -> list[Fact]:
    return [Fact("accuracy.gsm8k.full", f.results.strict.value, where="rack")] if f.results is not None else []


# the runs' own bounds (accuracy.quick_timeout_s, request_timeout_s, full_timeout_s) end them first
declare(Check("ACC-QUICK", "server", probe=acc.quick, judge=quick_passes, shows=quick_shown, facts=quick_facts,
              timeout_s=7200),
        Check("ACC-UNDER-LOAD", "server", probe=acc.under_load, judge=under_load_agrees, shows=under_load_shown,
              timeout_s=7200),
        Check("ACC-GSM8K", "server", probe=acc.full, judge=full_passes, shows=full_shown, facts=full_facts,
              timeout_s=14400))
