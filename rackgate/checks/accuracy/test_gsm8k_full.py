"""ACC-GSM8K: the reportable number, from lm-evaluation-harness itself (the runbook's command)."""
import pytest

from rackgate.errors import CouldNotObserve
from rackgate.gates import accuracy
from rackgate.gsm8k import lmeval, setup
from rackgate.gsm8k.data import DataError
from rackgate.report.verdict import check, fail


@pytest.mark.timeout(14400)  # bounded by accuracy.full_timeout_s
@pytest.mark.row("ACC-GSM8K")
def test_gsm8k_lm_eval(server, rack, evidence, facts, pytestconfig):
    cfg = rack.accuracy
    out = lmeval.new_run_dir(cfg.output_dir)
    key = rack.server.api_key.get_secret_value() if rack.server.api_key else None
    try:
        plan = lmeval.plan(cfg, server.url, server.client.model, out, cfg.full_limit, key)
    except DataError as e:
        raise CouldNotObserve(str(e)) from None
    evidence.attach("lm_eval command", plan.shown())
    try:
        run = lmeval.execute(plan, cfg.full_timeout_s, setup.reporter(pytestconfig), cfg.progress_every_s)
    except lmeval.LmEvalError as e:
        raise CouldNotObserve(str(e)) from None
    evidence.attach("lm_eval log (last lines)", run.tail(40))
    if run.rc != 0:
        raise CouldNotObserve(f"lm_eval exited {run.rc} after {run.seconds:.0f}s: {run.last_error()} "
                              f"(log: {run.log_path})")
    try:
        results = lmeval.read_outputs(out, plan.task)
    except lmeval.ResultsError as e:
        raise CouldNotObserve(str(e)) from None
    evidence.attach("lm_eval results", f"{lmeval.describe(results)}\nresults: {results.path}\n"
                                       f"samples: {results.sample_path}")
    facts.record("accuracy.gsm8k.full", results.strict.value, where="rack", row="ACC-GSM8K")
    why = accuracy.judge(results, cfg)
    rehearsal = f" (a --limit {cfg.full_limit} rehearsal, not the reportable number)" if cfg.full_limit else ""
    broken = accuracy.degenerate_share(results)
    if broken:  # the server's fault, not the model's accuracy: SRV-SANITY's reading, named here
        fail("SRV-SANITY", server.url, f"ACC-GSM8K: {broken}; {lmeval.describe(results)}{rehearsal}")
    check(not why, "ACC-GSM8K", server.url, f"{lmeval.describe(results)}{rehearsal}: {'; '.join(why)}")
