"""The suite against a real model server, as a user runs it: pytest in a subprocess with
`--rack FILE --atom-url URL --served-model NAME` (attach: the suite launches and stops nothing).

- healthy SmolLM2 (one suite run): SRV-SANITY, SRV-MODELS and ACC-BUDGET pass, and
  SRV-STREAM-CONSISTENCY with SmolLM2's tokenizer.json;
- final norm NaN: SRV-SANITY fails with the catalogue's diagnosis ("empty text": the NaN logits
  make greedy decoding pick token 0, a special token, every step);
- <think> chat template: ACC-BUDGET fails (content "" with reasoning_content, finish length);
- aiperf against it: BENCH-RESULT accepts a clean run and rejects one that named a model the
  server does not serve;
- the quick gate's per-question verdicts equal lm-eval's --log_samples on the same questions.
ACC-UNDER-LOAD and the output-length facts are proven in the healthy gate's run
(test_gate_command.py): one run of the quick gate and its under-load questions, not two.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rackgate.catalogue import row

from ..harness import run_suite
from . import runners

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(1800)]

SANITY = "SRV-SANITY::server"
MODELS = "SRV-MODELS::server"
BUDGET = "ACC-BUDGET::server"
BENCH_RESULT = "BENCH-RESULT::server"
SUITE_TIMEOUT = 1500  # seconds: a suite run against a 2-core CPU engine, aiperf included


def _suite(tmp_path: Path, srv, rack: Path, *ids: str):
    run = run_suite(tmp_path, *ids, "--rack", str(rack), "--atom-url", srv.url, "--served-model", srv.model,
                    timeout=SUITE_TIMEOUT)
    assert srv.alive(), "the suite stopped a server it only attached to"
    return run


def _diagnosis_in(run, test_id: str, row_id: str) -> str:
    msg = run.outcomes[test_id].message
    r = row(row_id)
    assert r.meaning in msg and r.action in msg, msg
    return msg


STREAM = "SRV-STREAM-CONSISTENCY::server"


def test_healthy_engine_passes_sanity_models_budget_and_stream_consistency(healthy, models, tmp_path):
    """SRV-SANITY, SRV-MODELS, ACC-BUDGET and SRV-STREAM-CONSISTENCY pass against transformers serve:
    streamed and plain greedy completions agree, and its usage counts agree with SmolLM2's own
    tokenizer.json. (One suite run: they were two, SRV-SANITY asked in both.)"""
    rack = runners.rack_file(tmp_path / "rack.toml", healthy.model, max_tokens=16, tokenizer=str(models.dir("healthy")))
    run = _suite(tmp_path, healthy, rack, SANITY, MODELS, BUDGET, STREAM)
    assert {k: o.status for k, o in run.outcomes.items()} == {SANITY: "passed", MODELS: "passed", BUDGET: "passed",
                                                              STREAM: "passed"}, run.stdout[-3000:]


def test_nan_norm_engine_fails_sanity_with_the_diagnosis(serve, tmp_path):
    with serve("nan-norm") as srv:
        rack = runners.rack_file(tmp_path / "rack.toml", srv.model, max_tokens=16)
        run = _suite(tmp_path, srv, rack, SANITY, MODELS)
    assert run.outcomes[MODELS].status == "passed", run.stdout[-3000:]
    assert run.outcomes[SANITY].status == "failed", run.stdout[-3000:]
    msg = _diagnosis_in(run, SANITY, "SRV-SANITY")
    assert "empty text" in msg, msg


def test_reasoning_template_engine_fails_budget(serve, tmp_path):
    with serve("reasoning-template") as srv:
        rack = runners.rack_file(tmp_path / "rack.toml", srv.model, max_tokens=16)
        run = _suite(tmp_path, srv, rack, BUDGET, SANITY)
    # completions carry no chat template: the raw model is still sane
    assert run.outcomes[SANITY].status == "passed", run.stdout[-3000:]
    assert run.outcomes[BUDGET].status == "failed", run.stdout[-3000:]
    msg = _diagnosis_in(run, BUDGET, "ACC-BUDGET")
    assert "content=''" in msg and "finish_reason='length'" in msg and "reasoning_content=set" in msg, msg


# --- BENCH-RESULT on aiperf's own output ---------------------------------------------------------
def _bench_rack(tmp_path: Path, srv, engine_bin: Path, models, wire_model: str, **kw) -> tuple[Path, Path]:
    out = tmp_path / "aiperf"
    cmd = runners.aiperf_command(engine_bin, wire_model, "http://{head_ip}:{port}", models.dir("healthy"), out, **kw)
    rack = runners.rack_file(tmp_path / "rack.toml", srv.model, shim_dir=runners.docker_shim(tmp_path / "shim"),
                             bench_command=cmd, bench_result_path=str(out))
    return rack, out


def test_bench_result_accepts_a_clean_aiperf_run(healthy, engine_bin, models, tmp_path):
    rack, out = _bench_rack(tmp_path, healthy, engine_bin, models, "{served_model}")
    run = _suite(tmp_path, healthy, rack, BENCH_RESULT)
    assert run.outcomes[BENCH_RESULT].status == "passed", run.stdout[-3000:]
    counts = runners.aiperf_counts(runners.read_aiperf_export(out))
    assert counts["request_count"] == 4 and not counts["error_request_count"], counts


def test_bench_result_rejects_a_run_that_names_an_unserved_model(healthy, engine_bin, models, tmp_path):
    """Half the requests name a model the server does not serve: HTTP 400 for those, aiperf
    exits 0 and its export says error_request_count 2: the silent failure BENCH-RESULT exists for."""
    rack, out = _bench_rack(tmp_path, healthy, engine_bin, models, "{served_model},not-the-served-model",
                            model_selection="round_robin")
    run = _suite(tmp_path, healthy, rack, BENCH_RESULT)
    assert run.outcomes[BENCH_RESULT].status == "failed", run.stdout[-3000:]
    msg = _diagnosis_in(run, BENCH_RESULT, "BENCH-RESULT")
    assert "2 of 4 requests failed" in msg and "exited 0" in msg and "pinned" in msg, msg
    counts = runners.aiperf_counts(runners.read_aiperf_export(out))
    assert counts["request_count"] == 2 and counts["error_request_count"] == 2, counts


def test_bench_result_rejects_a_run_where_every_request_names_an_unserved_model(healthy, engine_bin, models,
                                                                                 tmp_path):
    rack, out = _bench_rack(tmp_path, healthy, engine_bin, models, "not-the-served-model")
    run = _suite(tmp_path, healthy, rack, BENCH_RESULT)
    assert runners.read_aiperf_export(out) is None  # aiperf 0.13.0 writes no export when all failed
    assert run.outcomes[BENCH_RESULT].status == "failed", run.stdout[-3000:]
    _diagnosis_in(run, BENCH_RESULT, "BENCH-RESULT")


# --- ACC-QUICK agrees with lm-eval, question by question --------------------------------------
# Questions 0..N-1 of the shortest rows. SmolLM2's strict-match verdict is "fails" on each of the
# first eight (an extracted number that is wrong; question 7 runs to max_tokens, [invalid]), so every
# question proves the same: the gate extracts what lm-eval extracts and judges as it judges. Two, not
# four: the third and fourth proved nothing the first two did not, at two asks each (wave 12).
GSM8K_N = int(os.environ.get("RACKGATE_REALENGINE_GSM8K_N", "2"))
GSM8K_MAX_TOKENS = 128  # SmolLM2 answers in 20-60 tokens and stops at "Question:"


def test_quick_gate_verdicts_equal_lm_eval_per_question(gsm8k_dir, healthy, engine_bin, tmp_path):
    """The quick gate judges questions 0..N-1 with its own client (lm-eval's task definition,
    prompts and filters, read from the suite's lm-eval); lm-eval itself (the venv's, a separate
    process) runs --limit N --log_samples against the same server. Same questions, same
    few-shot draws (a --limit run takes documents in order), greedy: the strict-match verdict
    and the extracted answer must be the same for every question.

    The gate is driven through rackgate.gsm8k.quick.ask, not a suite run: the gate asks
    questions in a seeded random order (accuracy.quick_seed), so a suite run's questions are
    not the first N that a --limit run scores."""
    pytest.importorskip("lm_eval", reason="the quick gate needs lm-eval in the suite's Python (pip install -e .)")
    from rackgate.atom.client import Client
    from rackgate.gsm8k import quick
    from rackgate.gsm8k.task import Gsm8kTask

    task = Gsm8kTask(str(gsm8k_dir), num_fewshot=5, fewshot_seed=1234, api="completions",
                     gen_kwargs={"max_tokens": GSM8K_MAX_TOKENS, "temperature": 0, "top_p": 1}, eos_string="</s>")
    gate = {it.doc: it for it in quick.ask(task, lambda: Client(healthy.url, healthy.model, 900), range(GSM8K_N), 1)}

    task_dir = tmp_path / "tasks"
    runners.gsm8k_task_yaml(task_dir, engine_bin / "python", gsm8k_dir)
    lme = runners.run_lm_eval(engine_bin, healthy.url, healthy.model, task_dir, tmp_path / "lm-eval",
                              limit=GSM8K_N, api="completions", max_tokens=GSM8K_MAX_TOKENS)
    assert lme.rc == 0, lme.output[-3000:]
    ref = runners.lm_eval_samples(tmp_path / "lm-eval")

    assert sorted(gate) == sorted(ref) == list(range(GSM8K_N))
    # answers to judge (the short rows' 5 shots keep SmolLM2 answering): two empty ones would agree
    assert all(it.response.strip() for it in gate.values()), {d: it.response for d, it in gate.items()}
    mine = {d: (it.passed, it.strict.extracted) for d, it in gate.items()}
    theirs = {d: (s["exact_match"] == 1.0, s["filtered_resps"][0]) for d, s in ref.items()}
    assert mine == theirs, "\n".join(
        f"question {d}: gate {mine[d]} (answer {gate[d].response[-120:]!r}) vs lm-eval {theirs[d]} "
        f"(answer {ref[d]['resps'][0][0][-120:]!r})" for d in sorted(mine) if mine[d] != theirs[d])
