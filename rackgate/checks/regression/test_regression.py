"""REG-FACTS: after an image change, every fact the baseline recorded is measured again and
stays within its [regression] tolerance (one item per fact name; see rackgate/hooks/regression.py)."""
import pytest

from rackgate.baseline import compare as cmp
from rackgate.gsm8k import lengths
from rackgate.report import plots
from rackgate.report.verdict import check


@pytest.mark.row("REG-FACTS")
def test_facts_within_tolerance(regression_fact, regression, evidence):
    moves, not_selected = regression.compare(regression_fact)
    head = regression.header()
    evidence.attach(f"{regression_fact}: old -> new", head + "\n\n" + cmp.table(moves)
                    + (f"\nnot compared (their checks were not selected): {', '.join(not_selected)}"
                       if not_selected else ""))
    evidence.attach(f"{regression_fact}.csv", cmp.csv(moves), "csv")
    picture = plots.fact_moves(regression_fact, moves)
    if picture:
        evidence.plot(f"{regression_fact}: baseline vs this run", picture)
    per_question = lengths.distribution_of(regression_fact)
    if per_question:  # a distribution's mean or spread: both distributions, drawn
        old, new = (lengths.counts_of(v[0]) if v else [] for v in regression.values(per_question))
        if old and new:
            evidence.plot(f"{per_question}: baseline vs this run",
                          plots.distributions(per_question, {"baseline": old, "this run": new}, "tokens"))
    bad = [m for m in moves if not m.ok]
    check(not bad, "REG-FACTS", regression_fact,
          f"{len(bad)} of {len(moves)} {regression_fact} figures moved beyond tolerance since the baseline "
          f"{regression.state.baseline.describe()}:\n" + head + "\n" + cmp.table(bad))
