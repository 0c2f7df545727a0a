"""`rackgate --help-pytest` is pytest's help with rackgate's options (in-process pytest.main: its
plugins start processes at configure time, so this is not the unit tier's; selftest/test_cli_help.py
has the rest of the command's own help)."""
from __future__ import annotations

import pytest

from rackgate import cli

pytestmark = pytest.mark.suite


def test_help_pytest_is_pytests_help_with_rackgates_options(capsys):
    assert cli.main(["--help-pytest"]) == 0
    out = capsys.readouterr().out
    assert "positional arguments:" in out and "--junit-xml" in out
    assert "rackgate: hardware acceptance" in out and "--sim-fault" in out
