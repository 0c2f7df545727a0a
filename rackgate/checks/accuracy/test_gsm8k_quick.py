"""ACC-QUICK: lm-eval's GSM8K questions, asked concurrently, stopped when the verdict is settled.
Every rank is asked once first (preflight); the questions go to the ranks in turn under the hang
rule: questions in flight past its bound while others came back are a FAILED cross-referenced to
SRV-DEADLOCK (settle), never could-not-observe."""
import pytest

from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import preflight, settle
from rackgate.gsm8k import lengths, quick, setup
from rackgate.gsm8k.data import DataError
from rackgate.gsm8k.task import TaskError
from rackgate.report.verdict import check, fail


@pytest.mark.timeout(7200)  # bounded by accuracy.quick_timeout_s and the per-request timeout
@pytest.mark.row("ACC-QUICK")
def test_gsm8k_quick(server, per_rank, rack, evidence, facts, pytestconfig, gate_results):
    cfg = rack.accuracy
    try:
        task = setup.task_for(cfg)
    except (TaskError, DataError) as e:
        raise CouldNotObserve(str(e)) from None
    order = quick.question_order(len(task), cfg.quick_seed)
    preflight(per_rank, "ACC-QUICK", server, evidence)  # the pace starts at one question: every rank first
    # the questions go to the ranks in turn where the server takes the hint (decided once per run)
    table, hinted = per_rank.routing.table, per_rank.routing.hinted
    try:
        result = quick.run(task, setup.clients_for(rack, server.url, server.client.model), setup.sprt_for(cfg),
                           order, cfg.num_concurrent, progress=setup.reporter(pytestconfig),
                           progress_every_s=cfg.progress_every_s, wait_s=cfg.request_timeout_s,
                           timeout_s=cfg.quick_timeout_s, table=table if hinted else None, hang=per_rank.hang)
    except quick.QuickHang as e:
        gate_results["ACC-QUICK"] = f"saw a hang (SRV-DEADLOCK): {e}"
        settle(per_rank.read(e.fanned), "ACC-QUICK", server, evidence,
               own=f"{e.scored} GSM8K questions scored before the hang")
        raise CouldNotObserve(str(e)) from None  # settle fails on every hang: not reached
    except quick.QuickTimeout as e:
        raise CouldNotObserve(str(e)) from None
    evidence.attach("quick gate", result.summary() + "\n" + "\n".join(result.examples(10)))
    evidence.attach("per question: doc, strict-match outcome, extracted, finish_reason", "\n".join(
        f"{it.doc}\t{it.strict.outcome.value}\t{it.strict.extracted}\t{it.finish_reason}" for it in result.items))
    facts.record("accuracy.gsm8k.quick", round(result.accuracy(), 4), where="rack", row="ACC-QUICK")
    for name, value in lengths.facts(result.items).items():  # output length (MLPerf TEST09)
        facts.record(name, value, where="rack", unit="tokens", row="ACC-QUICK")
    degenerate = result.degenerate_line()
    # ACC-UNDER-LOAD compares with the model's accuracy, passed or failed; degenerate answers are none
    gate_results["ACC-QUICK"] = f"found degenerate answers (SRV-SANITY): {degenerate}" if degenerate else (
        result.accuracy(), len(result.items))
    if degenerate:  # the server's fault, not the model's accuracy: SRV-SANITY's reading, named here
        fail("SRV-SANITY", result.broken() or server.url, f"ACC-QUICK: {degenerate}; {result.summary()}; e.g. "
             + " | ".join(result.examples()))
    check(result.decision.verdict == "pass", "ACC-QUICK", server.url,
          result.summary() + "; " + result.diagnosis() + "; e.g. " + " | ".join(result.examples()))
