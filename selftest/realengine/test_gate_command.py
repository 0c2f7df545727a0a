"""The README's gate commands, exactly as a user types them, against the real engine (issue 12.6),
and the quick gate's cancellation proved on it (issue 12.2).

    pytest -m gate --atom-url URL --served-model NAME --gsm8k-dir DIR              (no rack file)
    pytest --rack FILE -m gate --atom-url URL --served-model NAME                  (attach, rack file)

run from the project directory, plugins autoloaded. Asserted:
- the `!` server (SmolLM2 with NaN logits and '!' at id 0), no rack file (the attach profile):
  SRV-SANITY FAILED naming '!', and it is the first FAILED item; the costly checks ERROR
  "not run: SRV-SANITY failed (see it)";
- the healthy engines, with the real-engine rack file: no check says the server is broken, ACC-QUICK
  FAILS naming the model below the threshold, ACC-UNDER-LOAD PASSES and the output-length facts are
  recorded -- proven on three healthy engines as three DP ranks (test_partly_broken.py's healthy
  case): one gate run for both, they were two runs of the same healthy gate (wave 10). The rack
  file (`engine_rack`) only fits the questions to this engine:
  completions (SmolLM2's 5-shot answers stop at "Question:" after 20-60 tokens; in chat mode it
  answers at ~4 tok/s and one of the gate's first questions ran past 700 tokens of the profile's
  12288, see docs/real-engine.md), max_tokens 16 (every answer cut: GATE_MAX_TOKENS),
  one question in flight per engine, ACC-UNDER-LOAD's fillers of one token, and SRV-LONGCTX's prompts of
  40 words, one a rank. The sequential test,
  its thresholds and error rates are Kimi-K3's defaults: it settles FAIL after its first 5 answers
  that do not score.
Order, not seconds: the seconds are in benchmarks/time_to_verdict.py.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rackgate.report import junit
from rackgate.transport.deadline import wait_for

from ..harness import REPO
from . import runners

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(1800)]

# ids relative to rackgate/checks: a separate option value that is a path outside the checkout (the
# model folder, the GSM8K folder, the rack file) moves pytest's rootdir (rackgate/pytest_plugin.py),
# e.g. to the checkout's parent (ids then start with the checkout's own folder name): `checks_id`
SANITY = "SRV-SANITY::server"
QUICK = "ACC-QUICK::server"
UNDER_LOAD = "ACC-UNDER-LOAD::server"
SERVER_BROKEN_ROWS = ("SRV-SANITY", "SRV-MODELS", "SRV-CONSISTENCY", "ACC-BUDGET")


# The gate's GSM8K questions, fitted to what these tests prove -- the gate's verdicts on a healthy or
# broken engine, not SmolLM2's answers (lm-eval's verdict on those: test_suite_on_engine.py's
# agreement test, 128 tokens). At 16 tokens every 5-shot answer is cut ("truncated", finish_reason
# length: a coherent answer that does not score), so ACC-QUICK settles FAIL after its first 5
# questions, naming the model below the threshold, and ACC-UNDER-LOAD's answers agree with them;
# ACC-BUDGET's one chat answer fits 16 ("42"). The shots stay 5: with one, 2 of 5 answers were
# empty with finish_reason stop (SmolLM2 wrote "Question:" at once), which the gate rightly reads as
# the server's fault (wave 8, docs/performance.md).
GATE_MAX_TOKENS = 16
# SRV-LONGCTX's prompts, in words: the default (3 x ATOM's --max-num-batched-tokens, 49152 tokens) is
# beyond SmolLM2's 8192 positions, and its four prefills ran into pytest's 300 s timeout (an ERROR, the
# engine busy all the while: wave 8, docs/performance.md). Attached, the gate cannot read the server's
# log after the long prompts (no container): SRV-LONGCTX ends could-not-observe whatever their length,
# so they are short (40 words) and one a rank (longctx_concurrency 1: the default 4 asked one engine
# of three twice); its PASS on a launched engine's log is test_launch.py's, at 300 words (wave 11)
LONGCTX_WORDS = 40
UNDER_LOAD_FILLER_WORDS = 20
UNDER_LOAD_FILLER_TOKENS = 1


def gate_command(srv, tmp_path: Path, gsm8k_dir: Path, rack: Path | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    """The README's attach command, without or with a rack file (plus where the reports go, and
    `extra` options such as --record-baseline)."""
    reports = [f"--junitxml={tmp_path / 'junit.xml'}", f"--alluredir={tmp_path / 'allure'}"]
    attach = ["-m", "gate", "--atom-url", srv.url, "--served-model", srv.model]
    if rack is None:
        return ["pytest", *attach, "--gsm8k-dir", str(gsm8k_dir), *reports, *extra]
    return ["pytest", "--rack", str(rack), *attach, *reports, *extra]


def engine_rack(tmp_path: Path, srv, gsm8k_dir: Path, ranks: int = 1, serving: dict | None = None) -> Path:
    """The real-engine rack: Kimi-K3's accuracy thresholds, questions fitted to SmolLM2 on CPU.
    ranks: the DP ranks on its one node -- one engine is one rank (the rack file's default, 4, made
    every per-rank load four times over on the one engine: ACC-UNDER-LOAD's fillers of ~800 prompt
    tokens held 4 in flight, 287 of the gate's 414 s); the engines behind a balancer, each asked by
    the hint, are as many ranks. One question in flight per engine (accuracy.num_concurrent): an
    engine serves one request at a time (transformers serve without continuous batching), so more
    only queue, and the questions still queued when ACC-QUICK settles are prefilled for nothing."""
    return runners.rack_file(tmp_path / "rack.toml", srv.model, max_tokens=GATE_MAX_TOKENS, gpus_per_node=ranks,
                             # SRV-BATCH's rounds (dozens of requests a rank) are its own real-engine
                             # test's (test_batch_engine.py): the gate runs here prove the other rows
                             serving={"longctx_words": LONGCTX_WORDS, "longctx_concurrency": 1, "batch": False,
                                      **(serving or {})},
                             accuracy={"api": "completions", "gsm8k_dir": str(gsm8k_dir),
                                       "num_concurrent": ranks,
                                       # ACC-UNDER-LOAD runs whatever ACC-QUICK scored (it reads its
                                       # accuracy): the fewest questions and fillers on 2 CPU cores
                                       "under_load_questions": 4, "under_load_per_rank": 1,
                                       # a filler is a request queued between the questions here
                                       # (one request at a time an engine): every engine is busy
                                       # back to back while the questions run, whatever a filler's
                                       # size, and a question waits out the filler ahead of it. The
                                       # shortest filler keeps the load and shortens the wait: 1
                                       # token (each filler's max_tokens) of a 20-word prompt (600
                                       # words, the default, were ~800 prefill tokens; wave 12)
                                       "under_load_max_tokens": UNDER_LOAD_FILLER_TOKENS,
                                       "under_load_filler_words": UNDER_LOAD_FILLER_WORDS})


def run_gate(srv, tmp_path: Path, gsm8k_dir: Path, timeout: float = 1500, rack: Path | None = None,
             extra: tuple[str, ...] = ()):
    cmd = gate_command(srv, tmp_path, gsm8k_dir, rack, extra)
    p = subprocess.run([sys.executable, "-m", *cmd], check=False, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert srv.alive(), "the suite stopped a server it only attached to"
    return p, {checks_id(k): v for k, v in junit.read(tmp_path / "junit.xml").items()}


def checks_id(nodeid: str) -> str:
    """A check's id relative to rackgate/checks, wherever pytest's rootdir landed."""
    head, sep, tail = nodeid.rpartition("rackgate/checks/")
    return tail if sep else nodeid


def test_gate_names_the_bang_server_first(serve, tmp_path, gsm8k_dir):
    with serve("bang") as srv:
        p, outcomes = run_gate(srv, tmp_path, gsm8k_dir)
    assert p.returncode != 0
    assert outcomes[SANITY].status == "failed", p.stdout[-3000:]
    assert "every character is '!'" in outcomes[SANITY].message
    first = next(k for k, o in outcomes.items() if o.status == "failed")
    assert first == SANITY, (first, p.stdout[-3000:])
    assert outcomes[QUICK].status == "error" and "not run: SRV-SANITY failed (see it)" in outcomes[QUICK].message


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its threads (/proc/PID/stat)."""
    f = Path(f"/proc/{pid}/stat").read_text()
    rest = f[f.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def _busy(pid: int, window: float = 1.0) -> float:
    a = _cpu_s(pid)
    time.sleep(window)
    return _cpu_s(pid) - a


def test_a_decided_gate_leaves_the_server_idle(serve, gsm8k_dir):
    """A long generation in flight (the `!` server never stops before max_tokens), cancelled as the
    quick gate cancels when it decides: the server's own CPU time stops growing."""
    from rackgate.atom.client import Client
    from rackgate.gsm8k import quick, setup
    task = setup._task(str(gsm8k_dir), 5, 1234, "chat", 100000, "</s>")
    with serve("bang") as srv:
        workers = quick._Workers(task, lambda: Client(srv.url, srv.model, 900), 1)
        box, done, handle = workers.submit(0, task.request(0), 900)
        deadline = time.monotonic() + 300
        while handle._resp is None and time.monotonic() < deadline:  # the stream is open
            time.sleep(0.2)
        # generating: its CPU time grows by a second (at whatever rate this machine's load allows)
        start = _cpu_s(srv.pid)
        grew = wait_for(lambda: _cpu_s(srv.pid) - start >= 1.0, 300, poll=0.5)
        assert grew, f"the server is not generating ({_cpu_s(srv.pid) - start:.2f} CPU s in 300 s): nothing to cancel"
        workers.close()  # what ask() does once the gate has decided
        assert done.wait(30) and "cancelled" in str(box[0])
        # idle: within a bounded wait, a one-second window in which the server uses no CPU
        idle_by = time.monotonic() + 60
        while _busy(srv.pid) > 0.05:
            assert time.monotonic() < idle_by, "the server kept generating after the stream was closed"
        tiny = srv.completion("The capital of France is", max_tokens=1, timeout=60)
        assert tiny.status == 200
