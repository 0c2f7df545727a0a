"""SRV-BATCH on real engines (issue 50.6): `transformers serve` engines behind a balancer that forms
real batches (selftest/realengine/batch_balancer.py), one DP rank, with the real-engine rack file
(`pytest --rack FILE -m gate --atom-url URL`, SRV-BATCH only).

- healthy + noisy-layer copy: the balancer answers a greedy request from the noisy copy only when
  its batch holds a request setting top_k. SRV-BATCH FAILS naming that condition -- moved under the
  mixed batch and, narrowed down, "mixed with top_k"; held alone, at bucket 2, mixed with every other
  sampling kind and on the repeat -- with the story prompt's two continuations (the noisy copy
  changes it at token 5: docs/real-engine.md).
- healthy + healthy (the same engine twice: no condition can move its answer): PASSED, the
  healthy control (3 runs of 3 with two CPU burners: benchmarks/batch_band_engines.py, whose figures
  are in docs/performance.md).
The rack asks one prompt of 8 tokens, buckets up to 2 and no long prompt (SRV-BATCH's cost on CPU
engines, docs/performance.md). transformers serve returns no logprobs on /v1/completions: tokens
alone are compared, and the report says so. Order and content, not seconds.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rackgate.report import junit

from ..harness import REPO
from . import runners
from .batch_balancer import BatchBalancer
from .test_gate_command import checks_id

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(1800)]

BATCH = "SRV-BATCH::cpu-dp0"
STORY = "Once upon a time, in a small village by the sea,"
# the prompt as written (no session tag: the noisy copy's change at token 5 is the story's own)
BATCH_SERVING = {"batch_prompts": [STORY], "batch_max_tokens": 8, "batch_concurrency": 2, "batch_prefix_words": 0,
                 "batch_tag": False}


def _batch(bal, tmp_path: Path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    rack = runners.rack_file(tmp_path / "rack.toml", bal.model, gpus_per_node=1, serving=BATCH_SERVING)
    cmd = [sys.executable, "-m", "pytest", "-m", "gate", "SRV-BATCH",
           "--rack", str(rack), "--atom-url", bal.url, "--served-model", bal.model,
           f"--junitxml={tmp_path / 'junit.xml'}", "-rA"]
    p = subprocess.run(cmd, check=False, cwd=REPO, capture_output=True, text=True, timeout=1500,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    return p, {checks_id(k): v for k, v in junit.read(tmp_path / "junit.xml").items()}


def test_a_copy_that_answers_wrong_only_beside_top_k_fails_naming_the_condition(serve, models, tmp_path):
    with serve("healthy") as healthy, serve("noisy-layer") as noisy:
        with BatchBalancer(models.name("healthy"), (healthy.url, healthy.model), (noisy.url, noisy.model)) as bal:
            p, out = _batch(bal, tmp_path / "noisy")
            assert bal.served[1] > 0, "the noisy copy answered the greedy requests beside top_k"
    o = out[BATCH]
    assert o.status == "failed" and o.message.lstrip().startswith("SRV-BATCH ["), p.stdout[-3000:] + p.stderr[-2000:]
    m = o.message
    assert "moved under mixed with sampled requests (top_k, top_p, temperature, logprobs, max_tokens, stop), " \
           "mixed with top_k; held under bucket 2, mixed with top_p" in m, m[:1500]
    assert "only when sampled requests share the batch" in m and "tokens alone compared" in m, m[:1500]
    assert "mixed with top_k, prompt p1 at position" in m, m[:1500]


def test_the_same_balancer_over_healthy_copies_passes(serve, models, tmp_path):
    with serve("healthy") as healthy:
        with BatchBalancer(models.name("healthy"), (healthy.url, healthy.model), (healthy.url, healthy.model)) as bal:
            p, out = _batch(bal, tmp_path / "healthy")
            assert bal.served[1] > 0, "the second copy answered the greedy requests beside top_k"
    assert out[BATCH].status == "passed", p.stdout[-3000:] + p.stderr[-2000:]
