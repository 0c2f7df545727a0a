"""Types at every boundary: mypy, under the project's own [tool.mypy] settings (pyproject.toml:
strict on rackgate/, the sim neither checked nor followed), finds nothing. scripts/setup.sh
installs the pinned mypy and the stub packages with the [selftest] extra."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from .harness import REPO

pytestmark = pytest.mark.suite


def test_mypy_is_clean():
    assert importlib.util.find_spec("mypy"), "mypy is not installed: bash scripts/setup.sh installs the pinned version"
    # this checkout's rackgate, whatever is installed; the cache is mypy's own (.mypy_cache, ignored by git)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout, proc.stdout[-2000:]
