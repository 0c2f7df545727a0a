"""The one verdict vocabulary: what rackgate concluded of an item, a place (GPU, node, tray) or a
run, and each output's way of saying it. The classifier (rackgate/hooks/outcome.py) gives every
item's report one `Verdict`; the terminal and JUnit (ERROR or FAILED), the verdict file
(PASS / FAIL / UNKNOWN), the rack map and the survey (pass / fail / could not observe) and the exit
code read it through the renderings here, never a table of their own.

    PASSED       positive evidence of health
    FAILED       positive evidence of this fault here (a finding)
    UNOBSERVED   the suite could not look (CouldNotObserve: a tool missing, a node unreachable, a
                 layout not recognised, NotRun)
    INTERNAL     rackgate's own bug (any other exception in a catalogue item): never FAILED

The one worst-wins rule (`worst`, `worse`): FAILED outranks UNOBSERVED and INTERNAL (equal), which
outrank PASSED. Nothing seen at all is `None`: each output says it its own way (the verdict file
UNKNOWN, the rack map "not run"). SKIPPED is pytest's own and no verdict (the rack file says the
check does not apply).

Imports nothing of the package (layer 2, beside errors.py): every layer may use it.
"""
from __future__ import annotations

from collections.abc import Iterable
from enum import Enum


class Verdict(Enum):
    """One verdict. Its value is the classifier's word, which travels in a pytest report's
    user_properties (the xdist controller reads the workers' verdicts: plain strings)."""
    PASSED = "passed"
    FAILED = "failed"
    UNOBSERVED = "could-not-observe"
    INTERNAL = "internal-error"

    @property
    def rank(self) -> int:
        """Worst wins: FAILED 2 > UNOBSERVED = INTERNAL 1 > PASSED 0."""
        return _RANK[self]

    @property
    def is_error(self) -> bool:
        """ERROR, not FAILED (terminal, JUnit's <error>): the suite could not look, or rackgate has a bug."""
        return self in (Verdict.UNOBSERVED, Verdict.INTERNAL)

    @property
    def file(self) -> str:
        """The verdict file's word (reports/verdict.json, fleet.json): PASS, FAIL or UNKNOWN."""
        return _FILE[self]

    @property
    def word(self) -> str:
        """The rack map's and the survey's word: pass, fail or could not observe."""
        return _WORD[self]

    @property
    def exit_code(self) -> int:
        """rackgate's exit code for a run (or a fleet) with this verdict: 0, 1 or 3 (README)."""
        return _EXIT[self]

    @classmethod
    def read(cls, word: str) -> Verdict:
        """The verdict a verdict file's word says (UNKNOWN: could not observe); ValueError for any
        other word."""
        try:
            return _FROM_FILE[word]
        except KeyError:
            raise ValueError(f"not a verdict: {word!r} (PASS, FAIL or UNKNOWN)") from None


_RANK = {Verdict.PASSED: 0, Verdict.UNOBSERVED: 1, Verdict.INTERNAL: 1, Verdict.FAILED: 2}
_FILE = {Verdict.PASSED: "PASS", Verdict.FAILED: "FAIL", Verdict.UNOBSERVED: "UNKNOWN", Verdict.INTERNAL: "UNKNOWN"}
_FROM_FILE = {"PASS": Verdict.PASSED, "FAIL": Verdict.FAILED, "UNKNOWN": Verdict.UNOBSERVED}
_WORD = {Verdict.PASSED: "pass", Verdict.FAILED: "fail", Verdict.UNOBSERVED: "could not observe",
         Verdict.INTERNAL: "could not observe"}
_EXIT = {Verdict.PASSED: 0, Verdict.FAILED: 1, Verdict.UNOBSERVED: 3, Verdict.INTERNAL: 3}


def worse(new: Verdict, old: Verdict | None) -> bool:
    """True when `new` outranks `old` for one item, place or run (an equal one does not)."""
    return old is None or new.rank > old.rank


def worst(verdicts: Iterable[Verdict]) -> Verdict | None:
    """The worst of `verdicts` (the first of equals); None when there are none."""
    out: Verdict | None = None
    for v in verdicts:
        if worse(v, out):
            out = v
    return out


def of_runs(words: Iterable[str]) -> Verdict:
    """The verdict of several runs (a fleet's racks) from their verdict files' words: the worst;
    no run, or a word that is no verdict, is could not observe (never PASS)."""
    said = []
    for w in words:
        try:
            said.append(Verdict.read(w))
        except ValueError:
            said.append(Verdict.UNOBSERVED)
    return worst(said) or Verdict.UNOBSERVED
