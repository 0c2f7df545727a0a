"""lm_eval end to end against the simulated ATOM server (the runbook's command, --limit 5), and
the quick gate against the same server: healthy passes from a fraction of the questions, a
model at 0 and a server that says only '!' fail within a handful."""
from __future__ import annotations

import pytest

from rackgate.atom.client import Client
from rackgate.config import load
from rackgate.gates import accuracy
from rackgate.gsm8k import lmeval, quick, setup
from rackgate.gsm8k.scoring import judge
from rackgate.gsm8k.task import FLEXIBLE, STRICT
from rackgate.sim.gsm8k import data_dir
from rackgate.sim.rack import SHIPPED_RACK

from .simserver import MODEL, sim_server

pytestmark = [pytest.mark.suite, pytest.mark.timeout(900)]


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
    assert accuracy.judge(results, cfg) == []
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


def stopping_quantile(sprt, accuracy: float, population: int, q: float) -> int:
    """The smallest n by which the sequential test has decided with probability >= q, for a model
    whose answers are right with probability `accuracy` (exact, by the distribution of (n, k)
    over the undecided paths, truncation and population included)."""
    undecided, done = {0: 1.0}, 0.0
    for n in range(1, min(sprt.max_n, population) + 1):
        step: dict[int, float] = {}
        for k, pr in undecided.items():
            step[k + 1] = step.get(k + 1, 0.0) + pr * accuracy
            step[k] = step.get(k, 0.0) + pr * (1 - accuracy)
        undecided = {}
        for k, pr in step.items():
            if sprt.decide(n, k, population).verdict:
                done += pr
            else:
                undecided[k] = pr
        if done >= q:
            return n
    return min(sprt.max_n, population)


def test_stopping_quantile_is_the_tests_own():
    """The helper against what the test's definition gives by hand: a model always right settles
    PASS after exactly fastest_pass questions; one always wrong FAIL after fastest_fail."""
    sprt = setup.sprt_for(load(SHIPPED_RACK).accuracy)
    assert stopping_quantile(sprt, 1.0, 1319, 0.5) == sprt.fastest_pass
    assert stopping_quantile(sprt, 0.0, 1319, 0.5) == sprt.fastest_fail
    assert stopping_quantile(sprt, 0.96, 1319, 0.5) < stopping_quantile(sprt, 0.96, 1319, 0.95)


def test_quick_gate_passes_the_healthy_sim_from_a_fraction(task, cfg):
    """The sim answers right with its [sim] accuracy (above the PASS hypothesis). The test may
    fail such a model with probability <= ~false_fail, and needs a random number of questions:
    the claim checked is the test's own, the question count within the quantile 1 - false_fail
    of its stopping time at that accuracy (the sim's answers and the order are seeded, so the
    same data set gives the same count on any machine, loaded or not)."""
    sprt = setup.sprt_for(cfg)
    lines: list[str] = []
    with sim_server() as url:
        r = _gate(task, cfg, url, lines)
    assert r.decision.verdict == "pass" and r.decision.how in ("settled", "all questions"), r.summary()
    bound = stopping_quantile(sprt, load(SHIPPED_RACK).sim.accuracy, len(task), 1 - sprt.false_fail)
    assert r.decision.n <= bound, f"{r.summary()}; the test's own {1 - sprt.false_fail:.0%} quantile: {bound}"
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


def test_lm_eval_runs_with_its_index_narrowed_to_the_local_task(cfg, tmp_path):
    """With a local data directory the plan runs lm_eval's CLI through lmeval_narrow.py, whose
    task index holds only the --include_path task (lm_eval's own `ls tasks` shows what it indexed);
    test_lm_eval_against_the_sim proves the run itself gives lm_eval's samples."""
    import subprocess
    import sys

    p = lmeval.plan(cfg, "http://127.0.0.1:9", MODEL, tmp_path)
    assert p.argv[:2] == [sys.executable, str(lmeval.NARROW)] and p.task == lmeval.LOCAL_TASK
    inc = p.argv[p.argv.index("--include_path") + 1]
    out = subprocess.run([sys.executable, str(lmeval.NARROW), "ls", "tasks", "--include_path", inc],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    # the tasks table: |Task|Config Location|Output Type| (the groups and tags tables are narrower)
    rows = [ln.split("|")[1].strip() for ln in out.stdout.splitlines()
            if ln.startswith("|") and ln.count("|") == 4 and "---" not in ln]
    assert rows == ["Task", lmeval.LOCAL_TASK], out.stdout
