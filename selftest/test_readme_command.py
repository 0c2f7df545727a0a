"""The README's self-test command proves what CI proves (issue 52, item 6): .ci/run runs it verbatim,
and its first half (scripts/setup.sh) installs the real engine the `realengine` tier needs, so a
fresh machine runs that tier instead of skipping it."""
import re

import pytest

from .harness import REPO

pytestmark = pytest.mark.unit


def _readme_command() -> str:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(bash scripts/setup.sh && python3 -m pytest selftest [^\n]+)\n```", text)
    assert block, "the README's self-test command is not where it was"
    return block.group(1)


def test_ci_runs_the_readmes_command():
    assert _readme_command() in (REPO / ".ci" / "run").read_text().splitlines()


def test_the_readmes_command_installs_the_real_engine():
    setup = [ln.strip() for ln in (REPO / "scripts" / "setup.sh").read_text().splitlines() if not ln.strip().startswith("#")]
    assert "bash scripts/real_engine/install.sh" in setup, "scripts/setup.sh does not install the real engine"
    assert _readme_command().startswith("bash scripts/setup.sh && ")
