"""ACC-UNDER-LOAD (MLPerf TEST01): the quick gate's questions asked while the server is kept full
score as the quick gate did: its accuracy compared with the quick gate's run, the session's one read
(rackgate/fixtures/quick_gate.py), made here when ACC-QUICK did not ask first."""
import pytest

from rackgate.atom.logs import rank_table
from rackgate.errors import CouldNotObserve, NotRun
from rackgate.fixtures.quick_gate import settled
from rackgate.fixtures.server import preflight, settle
from rackgate.gsm8k import quick, setup, under_load
from rackgate.gsm8k.data import DataError
from rackgate.gsm8k.scoring import Outcome
from rackgate.gsm8k.task import TaskError
from rackgate.probes import load
from rackgate.report.verdict import check


@pytest.mark.timeout(7200)  # bounded by accuracy.request_timeout_s per request
@pytest.mark.row("ACC-UNDER-LOAD")
def test_accuracy_under_load(server, per_rank, rack, evidence, quick_gate):
    cfg = rack.accuracy
    # the quick gate's accuracy, whether ACC-QUICK passed or failed (catalogue `reads`): the session's
    # run (rackgate/fixtures/quick_gate.py), asked here when ACC-QUICK did not ask first
    quick_run = settled(quick_gate.read(server, per_rank), "ACC-UNDER-LOAD", server, evidence)
    degenerate = quick_run.degenerate_line()
    if degenerate:  # no model accuracy to compare with: ACC-QUICK names SRV-SANITY
        raise NotRun("ACC-QUICK", f"found degenerate answers (SRV-SANITY): {degenerate}")
    quick_acc, quick_n = quick_run.accuracy(), len(quick_run.items)
    try:
        task = setup.task_for(cfg)
    except (TaskError, DataError) as e:
        raise CouldNotObserve(str(e)) from None
    docs = quick.question_order(len(task), cfg.quick_seed)[:cfg.under_load_questions]
    preflight(per_rank, "ACC-UNDER-LOAD", server, evidence)
    clients = setup.clients_for(rack, server.url, server.client.model)
    ranks = len(rank_table(rack))  # 0: attached without a rack file, the DP size unknown
    fillers = under_load.Fillers(clients, cfg.under_load_per_rank * ranks if ranks else cfg.under_load_fillers_attached,
                                 lambda i: load.prompt(600, i), cfg.under_load_max_tokens, cfg.request_timeout_s,
                                 per_rank.rank_of)  # the fillers on the ranks in turn, where hinted
    rank_of = {doc: per_rank.rank_of(i) for i, doc in enumerate(docs)}  # the ranks in turn, where hinted
    hung: quick.QuickHang | None = None
    try:
        items = list(quick.ask(task, clients, docs, cfg.num_concurrent, cfg.request_timeout_s,
                               under_load.Fixed(cfg.num_concurrent, cfg.request_timeout_s), rank_of.get,
                               hang=per_rank.hang))
    except quick.QuickHang as e:
        hung = e
    finally:
        fillers.stop(wait=hung is None)  # after a hang the fillers' requests end at their own bound
    if hung is not None:
        settle(per_rank.read(hung.fanned), "ACC-UNDER-LOAD", server, evidence,
               own=f"{hung.scored} GSM8K questions scored under load before the hang; {fillers.describe()}")
        raise CouldNotObserve(str(hung))  # settle fails on every hang: not reached
    loaded = sum(1 for it in items if it.strict.outcome is Outcome.CORRECT) / max(1, len(items))
    a = under_load.Agreement(quick_acc, quick_n, loaded, len(items), cfg.under_load_z)
    evidence.attach("under load", a.describe() + "\n" + fillers.describe() + "\n" + "\n".join(
        f"{it.doc}\t{it.strict.outcome.value}\t{it.strict.extracted}\t{it.finish_reason}" for it in items))
    if not fillers.answered:
        raise CouldNotObserve(f"no filler request was answered ({fillers.describe()}): the server was not under load")
    check(not a.falls, "ACC-UNDER-LOAD", server.url, "accuracy falls under load: " + a.describe()
          + "; " + fillers.describe())
