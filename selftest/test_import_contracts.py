"""The floor plan (docs/DEVELOPING.md) is enforced: import-linter's contracts in pyproject.toml
([tool.importlinter]) hold for every import, direct or through other modules."""
from __future__ import annotations

import os
import shutil
import subprocess

from .harness import REPO


def test_import_contracts_hold():
    lint = shutil.which("lint-imports")
    assert lint, "import-linter is not installed: bash scripts/setup.sh installs the [selftest] extra"
    # this checkout's rackgate, whatever is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([lint, "--no-cache"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout, proc.stdout[-2000:]
