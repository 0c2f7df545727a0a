"""ACC-QUICK: lm-eval's GSM8K questions, asked concurrently, stopped when the verdict is settled.
Every rank is asked once first (preflight); the questions go to the ranks in turn under the hang
rule: questions in flight past its bound while others came back are a FAILED cross-referenced to
SRV-DEADLOCK (settle), never could-not-observe. The run is the session's one read
(rackgate/fixtures/quick_gate.py), which ACC-UNDER-LOAD reads too."""
import pytest

from rackgate.fixtures.quick_gate import settled
from rackgate.gsm8k import lengths
from rackgate.report.verdict import check, fail


@pytest.mark.timeout(7200)  # bounded by accuracy.quick_timeout_s and the per-request timeout
@pytest.mark.row("ACC-QUICK")
def test_gsm8k_quick(server, per_rank, evidence, facts, quick_gate):
    # the session's run (rackgate/fixtures/quick_gate.py), asked here first: ACC-UNDER-LOAD reads it too
    result = settled(quick_gate.read(server, per_rank), "ACC-QUICK", server, evidence)
    evidence.attach("quick gate", result.summary() + "\n" + "\n".join(result.examples(10)))
    evidence.attach("per question: doc, strict-match outcome, extracted, finish_reason", "\n".join(
        f"{it.doc}\t{it.strict.outcome.value}\t{it.strict.extracted}\t{it.finish_reason}" for it in result.items))
    facts.record("accuracy.gsm8k.quick", round(result.accuracy(), 4), where="rack", row="ACC-QUICK")
    for name, value in lengths.facts(result.items).items():  # output length (MLPerf TEST09)
        facts.record(name, value, where="rack", unit="tokens", row="ACC-QUICK")
    degenerate = result.degenerate_line()
    if degenerate:  # the server's fault, not the model's accuracy: SRV-SANITY's reading, named here
        fail("SRV-SANITY", result.broken() or server.url, f"ACC-QUICK: {degenerate}; {result.summary()}; e.g. "
             + " | ".join(result.examples()))
    check(result.decision.verdict == "pass", "ACC-QUICK", server.url,
          result.summary() + "; " + result.diagnosis() + "; e.g. " + " | ".join(result.examples()))
