"""The one verdict vocabulary (rackgate/verdicts.py): each output's word for each verdict, the one
worst-wins rule, and no output keeping a vocabulary or a worst-rule of its own."""
import re
from pathlib import Path

import pytest

from rackgate import verdicts
from rackgate.verdicts import Verdict

pytestmark = pytest.mark.unit

P, F, U, I = Verdict.PASSED, Verdict.FAILED, Verdict.UNOBSERVED, Verdict.INTERNAL
PKG = Path(verdicts.__file__).parent


@pytest.mark.parametrize("v, file, word, code, error", [
    (P, "PASS", "pass", 0, False),
    (F, "FAIL", "fail", 1, False),
    (U, "UNKNOWN", "could not observe", 3, True),
    (I, "UNKNOWN", "could not observe", 3, True),   # our bug: never FAILED, never exit 1
])
def test_each_output_says_each_verdict_its_way(v, file, word, code, error):
    assert (v.file, v.word, v.exit_code, v.is_error) == (file, word, code, error)


def test_a_verdict_files_word_reads_back_and_nothing_else_does():
    assert [Verdict.read(v.file) for v in (P, F, U)] == [P, F, U]
    assert Verdict.read(I.file) is U
    for bad in ("pass", "ERROR", ""):
        with pytest.raises(ValueError, match="not a verdict"):
            Verdict.read(bad)


def test_worst_wins_and_nothing_seen_is_no_verdict():
    assert verdicts.worst([P, U, F, P]) is F
    assert verdicts.worst([P, I, U]) is I          # equals: the first stands
    assert verdicts.worst([P, P]) is P
    assert verdicts.worst([]) is None
    assert verdicts.worse(F, U) and verdicts.worse(U, P) and verdicts.worse(P, None)
    assert not verdicts.worse(P, F) and not verdicts.worse(I, U) and not verdicts.worse(U, I)


def test_a_fleets_verdict_is_its_worst_rack_and_no_rack_is_unknown():
    assert verdicts.of_runs(["PASS", "FAIL", "UNKNOWN"]) is F
    assert verdicts.of_runs(["PASS", "UNKNOWN"]) is U
    assert verdicts.of_runs(["PASS"]) is P
    assert verdicts.of_runs([]) is U
    assert verdicts.of_runs(["PASS", "garbled"]) is U   # never PASS on a word it cannot read


# The outputs that once kept their own words or worst-rule (issue 56): each may name its words only
# as renderings of Verdict; none compares verdict words to rank them.
OUTPUTS = ["hooks/outcome.py", "hooks/rackmap.py", "hooks/verdict_file.py", "report/rackmap.py",
           "report/verdict_file.py", "report/fleet.py", "survey/model.py", "survey/run.py", "fleet/gather.py",
           "fleet/cli.py", "fleet/drain.py", "cli.py"]
OWN_WORDS = re.compile(r'''["'](PASS|FAIL|UNKNOWN|pass|fail|could not observe|passed|failed|could-not-observe|'''
                       r'''internal-error)["']''')


@pytest.mark.parametrize("module", OUTPUTS)
def test_no_output_keeps_a_vocabulary_of_its_own(module):
    code = "\n".join(line for line in (PKG / module).read_text().splitlines() if not line.lstrip().startswith("#"))
    code = re.sub(r'"""[\s\S]*?"""', "", code)   # docstrings may name the words
    assert not OWN_WORDS.findall(code), f"{module} spells a verdict itself: use rackgate.verdicts.Verdict"
