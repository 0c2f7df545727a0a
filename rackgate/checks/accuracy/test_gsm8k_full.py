"""ACC-GSM8K: the reportable number, from lm-evaluation-harness itself (the runbook's command).

lm-eval sends no rank hint and its requests are not the suite's to time, so the hang rule reaches
it through the per-rank mechanism: every rank is asked once before lm-eval starts (preflight), and
again whenever lm-eval's own progress stalls past the hang bound of its answers so far or its log
says a request timed out (rackgate/gsm8k/lmeval.py `Stall`, `timed_out`). A rank that does not
answer then is SRV-DEADLOCK's FAILED on this row, lm-eval ended; every rank answering while
lm-eval's own request timed out after others came back is this row's FAILED naming the share;
a stall with every rank answering is a long answer, waited for."""
import time

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import preflight
from rackgate.gates import accuracy
from rackgate.gsm8k import lmeval, setup
from rackgate.gsm8k.data import DataError
from rackgate.report.verdict import check, fail


@pytest.mark.timeout(14400)  # bounded by accuracy.full_timeout_s
@pytest.mark.row("ACC-GSM8K")
def test_gsm8k_lm_eval(server, per_rank, rack, evidence, facts, pytestconfig):
    cfg = rack.accuracy
    out = lmeval.new_run_dir(cfg.output_dir)
    key = rack.server.api_key.get_secret_value() if rack.server.api_key else None
    try:
        plan = lmeval.plan(cfg, server.url, server.client.model, out, cfg.full_limit, key)
    except DataError as e:
        raise CouldNotObserve(str(e)) from None
    evidence.attach("lm_eval command", plan.shown())
    preflight(per_rank, "ACC-GSM8K", server, evidence)
    say = setup.reporter(pytestconfig)
    try:
        run = lmeval.execute(plan, cfg.full_timeout_s, say, cfg.progress_every_s,
                             watch=_watch(per_rank, server, evidence, say))
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


def _watch(per_rank, server, evidence, say):
    """lm-eval's progress under the hang rule: on a stall past the bound, or a request of its that
    timed out after others came back, every rank is asked (preflight: a rank that does not answer
    fails the row now and ends lm-eval)."""
    stall = lmeval.Stall(per_rank.hang.floor_s, per_rank.hang.factor)
    looked_at = [""]

    def watch(progress, log_text: str, elapsed: float) -> None:
        now = time.monotonic()
        stalled = stall.seen(progress, now)
        late = lmeval.timed_out(log_text) if progress and progress[0] else ""
        if stalled is None and (not late or late == looked_at[0]):
            return
        done, total = progress or (0, 0)
        seen = (f"lm_eval: {done} of {total} questions answered, then " +
                (f"none for {stalled:.0f}s (the bound: max({stall.floor_s:g}s, {stall.factor:g} x the longest wait "
                 f"between its answers, {stall.longest_s:.0f}s))" if stalled is not None else
                 f"a request of its timed out ({late})"))
        probe = preflight(per_rank, "ACC-GSM8K", server, evidence, own=seen)  # a rank that does not answer: FAILED
        stall.looked(now)
        if late and late != looked_at[0]:
            looked_at[0] = late
            fail("ACC-GSM8K", server.url, f"{seen}, while every rank answered a short request within "
                 f"{probe.slowest_s:.1f}s ({probe.routing.describe()}): {total - done} of {total} questions not "
                 "answered and at least one request in flight past its bound (SRV-DEADLOCK's signature: a rank "
                 "that takes requests and does not answer them; lm-eval sends no rank hint, so which rank is not "
                 "known: see SRV-DEADLOCK)")
        say(f"ACC-GSM8K: {seen}; every rank answered a short request within {probe.slowest_s:.1f}s: a long answer, "
            "waited for")
    return watch
