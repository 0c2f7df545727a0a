"""SRV-GOLDEN on real engines (issue 37.5): three `transformers serve` engines behind the
self-tests' balancer (selftest/realengine/balancer.py), attached without a rack file, as
`pytest -m gate --atom-url URL --served-model NAME` attaches.

- The golden set is recorded on three healthy SmolLM2 copies, then three healthy copies pass
  against it, tokens alone compared (transformers serve returns no logprobs on /v1/completions:
  the report says so).
- Two healthy copies and the noisy-layer copy (layer 15's MLP weights + 0.1 std of seeded noise:
  fluent, mostly the same text; model_store.py) FAIL, naming the share of drifting answers and
  reading it as some replicas, not an image change.
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
from .balancer import Balancer
from .server import TransformersServer
from .test_gate_command import checks_id

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(2400)]

GOLDEN = "serving/test_golden.py::test_golden"
SHARE = re.compile(r"(\d+) of (\d+) answers \((\d+)%\) drift from the golden set")


def _golden(bal, tmp_path: Path, baseline: Path, *extra: str):
    """pytest -m gate, the golden check only, attached without a rack file."""
    cmd = [sys.executable, "-m", "pytest", "-m", "gate", "rackgate/checks/serving/test_golden.py", "--atom-url",
           bal.url, "--served-model", bal.model, f"--baseline={baseline}", f"--junitxml={tmp_path / 'junit.xml'}",
           *extra]
    p = subprocess.run(cmd, check=False, cwd=REPO, capture_output=True, text=True, timeout=1500,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    return p, {checks_id(k): v for k, v in junit.read(tmp_path / "junit.xml").items()}


@pytest.fixture
def engines(serve, engine_bin, models, tmp_path):
    """Three healthy engines (the session's and two more) and the noisy-layer one."""
    name = models.name("healthy")
    with serve("healthy") as h1, serve("noisy-layer") as noisy:
        with TransformersServer(engine_bin, models.cache, name, tmp_path / "healthy-2.log") as h2, \
                TransformersServer(engine_bin, models.cache, name, tmp_path / "healthy-3.log") as h3:
            yield name, (h1, h2, h3), noisy


def test_a_noisy_copy_behind_the_balancer_fails_naming_the_share(engines, tmp_path):
    name, (h1, h2, h3), noisy = engines
    base = tmp_path / "baseline.json"
    with Balancer(name, [(h.url, h.model) for h in (h1, h2, h3)]) as bal:
        p, out = _golden(bal, tmp_path / "record", base, "--record-baseline")
        assert out[GOLDEN].status == "passed", p.stdout[-3000:] + p.stderr[-2000:]
        assert "the golden set (SRV-GOLDEN)" in p.stdout, p.stdout[-2000:]
        p, out = _golden(bal, tmp_path / "healthy", base, "-rA")
        assert out[GOLDEN].status == "passed", p.stdout[-3000:]
    with Balancer(name, [(h1.url, h1.model), (h2.url, h2.model), (noisy.url, noisy.model)]) as bal:
        p, out = _golden(bal, tmp_path / "noisy", base)
        assert bal.served[2] > 0  # the noisy copy answered some of them
    o = out[GOLDEN]
    assert o.status == "failed", p.stdout[-3000:]
    m = SHARE.search(o.message)
    assert m, o.message[:1500]
    k, n = int(m.group(1)), int(m.group(2))
    assert 0 < k < n, o.message[:1500]  # some answers, not all: not an image change
    assert "tokens alone compared" in o.message and "some answers drift and others do not" in o.message
    assert re.search(r"golden (\.\.\.)?['\"].*['\"] \| this (\.\.\.)?['\"]", o.message), o.message[:3000]  # side by side
    print(o.message)  # the message, whole, for docs/performance.md (pytest -s)
