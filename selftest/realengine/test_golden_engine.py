"""SRV-GOLDEN on real engines (issue 37.5): `transformers serve` engines behind the self-tests'
balancer (selftest/realengine/balancer.py) as three DP ranks, ATOM's data_parallel_rank hint
taken, with the real-engine rack file (`pytest --rack FILE -m gate --atom-url URL`).

- The golden set is recorded on one healthy rank (it passes).
- Against it, that rank, a second healthy engine as dp1 (it passes: two engine processes give the
  recorded answers) and the noisy-layer copy as dp2 (layer 15's MLP weights
  + 0.1 std of seeded noise: fluent, mostly the same text; model_store.py), tokens alone compared
  (transformers serve returns no logprobs on /v1/completions: the report says so): the two
  healthy ranks PASS and dp2 FAILS, naming the share of drifting answers and dp2, read as one rank
  of three, not an image change. (One comparison run for both: they were two, the healthy ranks'
  and the noisy one's, each asking every prompt of every rank again; wave 9. Two healthy ranks, not
  three: a third agreeing rank proved nothing more and cost an engine start and 16 of the 56
  answers; wave 10. Recorded on one rank, not two: the second healthy engine's agreement is its
  PASS in the comparison, and recording against the answer most ranks gave is
  selftest/serving/test_golden_declared.py's
  `test_recording_holds_the_ranks_to_the_majority_and_keeps_only_the_ranks_that_agree`; 8 of the 40
  answers, wave 11. A rack of one rank is asked without the hint: its answers carry no rank and are
  its own, which this recording also proves on a real engine.)
The ranks are asked by the hint, so the noisy rank answers every prompt: what it changes is seen
on every run (spread by least requests, a prompt could miss it). The rack file asks 8 tokens
(the default 32 is for racks: docs/serving.md): the noisy copy changes one of the eight answers
within them, the story's at position 5 (at 16 tokens also the arithmetic's at 9: one drifting
answer proves the verdict as well as two; 8 tokens, not 16, wave 12).
Order and content, not seconds (the seconds: docs/performance.md).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rackgate.report import junit

from ..harness import REPO
from . import runners
from .balancer import Balancer
from .server import TransformersServer
from .test_gate_command import checks_id

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(2400)]

GOLDEN = "SRV-GOLDEN"  # one item per DP rank: [cpu-dp0] .. [cpu-dp2]
ITEMS = [f"{GOLDEN}::cpu-dp{r}" for r in range(3)]
SHARE = re.compile(r"(\d+) of (\d+) answers \((\d+)%\) drift from the golden set")


# SRV-GOLDEN's cost on CPU engines (docs/performance.md): 8 prompts x 1 or 3 ranks x 8 tokens
GOLDEN_SERVING = {"golden_max_tokens": 8}


def _golden(bal, tmp_path: Path, baseline: Path, *extra: str):
    """pytest --rack FILE -m gate, the golden check only, the balancer's engines as as many DP ranks."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rack = runners.rack_file(tmp_path / "rack.toml", bal.model, gpus_per_node=len(bal.engines), serving=GOLDEN_SERVING)
    cmd = [sys.executable, "-m", "pytest", "-m", "gate", "SRV-GOLDEN", "--rack", str(rack),
           "--atom-url", bal.url, "--served-model", bal.model, f"--baseline={baseline}",
           f"--junitxml={tmp_path / 'junit.xml'}", *extra]
    p = subprocess.run(cmd, check=False, cwd=REPO, capture_output=True, text=True, timeout=1500,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    return p, {checks_id(k): v for k, v in junit.read(tmp_path / "junit.xml").items()}


@pytest.fixture
def engines(serve):
    """The session's healthy engine and the noisy-layer one (the second healthy engine is the test's
    own: its start and stop by PID are asserted there)."""
    with serve("healthy") as h1, serve("noisy-layer") as noisy:
        yield h1, noisy


def _owned_by_pid(srv: TransformersServer, name: str) -> None:
    """A server we started: alive, leading its own process group, pinned to the name it was given
    (the folder's bare name, and only that: another model is HTTP 400)."""
    assert srv.alive()
    assert srv.pid is not None and os.getpgid(srv.pid) == srv.pid, "the server leads its own process group"
    r = srv.models()
    assert r.status == 200 and [m["id"] for m in r.body["data"]] == [name], r.body
    wrong = srv.chat("hi", max_tokens=1, model="not-this-model")
    assert wrong.status == 400 and "pinned" in wrong.body.get("detail", ""), wrong.body


def _stopped_by_pid(srv: TransformersServer) -> None:
    """After stop(): the process has exited, nothing is left in its group, its PID is gone."""
    assert srv.proc is not None and srv.proc.returncode is not None, "the server process is still running after stop()"
    assert srv.group_members() == [], f"processes left in the server's group: {srv.group_members()}"
    with pytest.raises(ProcessLookupError):
        os.kill(srv.proc.pid, 0)


def test_a_noisy_rank_behind_the_balancer_fails_naming_the_share_and_the_rank(engines, engine_bin, models, tmp_path):
    """(Also the self-tests' server owned by PID, on the second healthy engine this test starts and
    stops: test_engine.py's start-and-stop test was an engine start of its own for it; wave 12.)"""
    h1, noisy = engines
    name = models.name("healthy")
    with TransformersServer(engine_bin, models.cache, name, tmp_path / "healthy-2.log") as h2:
        _owned_by_pid(h2, name)
        _noisy_rank_fails(name, h1, h2, noisy, tmp_path)
    _stopped_by_pid(h2)


def _noisy_rank_fails(name: str, h1: TransformersServer, h2: TransformersServer, noisy: TransformersServer,
                      tmp_path: Path) -> None:
    base = tmp_path / "baseline.json"
    with Balancer(name, [(h1.url, h1.model)]) as bal:
        p, out = _golden(bal, tmp_path / "record", base, "--record-baseline")
    assert out[ITEMS[0]].status == "passed", p.stdout[-3000:] + p.stderr[-2000:]
    assert ITEMS[1] not in out and ITEMS[2] not in out, sorted(out)  # one rank recorded, one item
    assert "the golden set (SRV-GOLDEN)" in p.stdout, p.stdout[-2000:]
    with Balancer(name, [(h.url, h.model) for h in (h1, h2, noisy)]) as bal:
        p, out = _golden(bal, tmp_path / "compare", base, "-rA")
        assert bal.served[2] > 0  # the noisy copy answered its rank's prompts
    assert [out[i].status for i in ITEMS[:2]] == ["passed"] * 2, p.stdout[-3000:]  # the healthy ranks
    o = out[ITEMS[2]]
    assert o.status == "failed" and o.message.lstrip().startswith("SRV-GOLDEN [cpu/dp2]"), p.stdout[-3000:]
    m = SHARE.search(o.message)
    assert m, o.message[:1500]
    k, n = int(m.group(1)), int(m.group(2))
    assert 0 < k <= n // 3, o.message[:1500]  # some of dp2's answers, none of the others'
    assert "tokens alone compared" in o.message and "1 of 3 ranks drift (dp2), the others match" in o.message
    assert re.search(r"cpu/dp2 '\w+' at position \d+", o.message), o.message[:1500]
    assert re.search(r"golden (\.\.\.)?['\"].*['\"] \| this (\.\.\.)?['\"]", o.message), o.message[:3000]  # side by side
    print(o.message)  # the message, whole, for docs/performance.md (pytest -s)
