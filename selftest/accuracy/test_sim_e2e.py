"""lm_eval end to end against the simulated ATOM server (the runbook's command, --limit 5), and
the quick gate against the same server: healthy passes from a fraction of the questions, a
model at 0 and a server that says only '!' fail within a handful."""
from __future__ import annotations

import pytest

from rackgate.atom.client import Client
from rackgate.config import load
from rackgate.gsm8k import lmeval, quick, setup
from rackgate.gsm8k.scoring import judge
from rackgate.gsm8k.task import FLEXIBLE, STRICT
from rackgate.sim.gsm8k import data_dir
from rackgate.sim.rack import SHIPPED_RACK

from .simserver import MODEL, sim_server

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def cfg():
    acc = load(SHIPPED_RACK).accuracy
    return acc.model_copy(update={"gsm8k_dir": str(data_dir())})


@pytest.fixture(scope="module")
def task(cfg):
    return setup.task_for(cfg)


def _gate(task, cfg, url, lines=None):
    order = quick.question_order(len(task), cfg.quick_seed)
    return quick.run(task, lambda: Client(url, MODEL, 30), setup.sprt_for(cfg), order, cfg.num_concurrent,
                     progress=(lines.append if lines is not None else None), progress_every_s=0.5,
                     wait_s=60, timeout_s=300)


def test_lm_eval_against_the_sim(cfg, task, tmp_path):
    with sim_server() as url:
        plan = lmeval.plan(cfg, url, MODEL, tmp_path, limit=5)
        lines: list[str] = []
        run = lmeval.execute(plan, timeout_s=600, progress=lines.append, progress_every_s=2)
        assert run.rc == 0, run.tail(30)
        results = lmeval.read_outputs(tmp_path, plan.task)
        asked = list(quick.ask(task, lambda: Client(url, MODEL, 30), range(5), 4, 60))
    assert results.n_samples == 5 and results.samples == 5
    assert results.strict.value == 1.0 and results.invalid == 0, lmeval.describe(results)
    assert lmeval.judge(results, cfg) == []
    assert any("lm_eval (pid" in ln for ln in lines)
    res_path, samples_path = lmeval.find_outputs(tmp_path, plan.task)
    with open(samples_path) as f:
        samples = {(s.doc_id, s.filter): s for s in lmeval.parse_samples(f)}
    for it in asked:  # the sim answers deterministically: the gate saw what lm_eval saw
        for f in (STRICT, FLEXIBLE):
            s = samples[(it.doc, f)]
            assert it.response == s.response
            assert (it.filters[f].extracted, it.filters[f].exact_match) == (s.extracted, s.exact_match)
            assert judge(task, it.doc, s.response).filters[f].exact_match == s.exact_match


def test_quick_gate_passes_the_healthy_sim_from_a_fraction(task, cfg):
    lines: list[str] = []
    with sim_server() as url:
        r = _gate(task, cfg, url, lines)
    assert r.decision.verdict == "pass" and r.decision.how == "settled", r.summary()
    assert r.decision.n < len(task) / 4, r.summary()
    assert lines and lines[-1].startswith("ACC-QUICK ")


def test_quick_gate_fails_a_model_at_zero(task, cfg):
    with sim_server(accuracy=0.0) as url:
        r = _gate(task, cfg, url)
    assert r.decision.verdict == "fail" and r.decision.n <= 10, r.summary()


def test_quick_gate_fails_bang_tokens_within_ten(task, cfg):
    with sim_server("bang-tokens") as url:
        r = _gate(task, cfg, url)
    assert r.decision.verdict == "fail" and r.decision.n <= 10, r.summary()
    assert r.counts()["unparsed"] == r.decision.n  # '!!!' is unparsed, not "wrong"


def test_quick_gate_on_a_degraded_model(task, cfg):
    """0.80: inside the test's FAIL hypothesis, it fails, long before the question limit."""
    with sim_server("accuracy-drop") as url:
        r = _gate(task, cfg, url)
    assert r.decision.verdict == "fail" and r.decision.how == "settled", r.summary()
