"""The tree is ruff-clean under the project's own [tool.ruff] settings (scripts/setup.sh installs ruff)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from .harness import REPO

pytestmark = pytest.mark.suite


def test_ruff_is_clean():
    ruff = shutil.which("ruff")
    assert ruff, "ruff is not installed: bash scripts/setup.sh installs the pinned version"
    proc = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", "."], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
