"""`rackgate --help` is rackgate's (its first screen: what it is, the subcommands, the main options,
the markers, where reports go, the exit codes, then where pytest's options are); `rackgate
--help-pytest` is pytest's with rackgate's options; `rackgate --version` names rackgate's version,
then pytest's."""
from __future__ import annotations

import pytest

from rackgate import __version__, cli

pytestmark = pytest.mark.unit

SCREEN = 24


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["help"], ["-m", "gate", "--rack", "r.toml", "--help"]])
def test_the_first_screen_is_rackgates_usage(argv, capsys):
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    screen = "\n".join(lines[:SCREEN])
    assert lines[0].startswith("usage: rackgate") and "pytest.main" not in screen
    for name, (_, text) in cli.SUBCOMMANDS.items():   # each subcommand, with its one line
        assert any(line.split()[:1] == [name] and text in line for line in lines[:SCREEN]), (name, screen)
    for word in ("--rack FILE", "--atom-url URL", "-m platform", "-m fabric", "-m gate", "-m regression",
                 "--baseline", "reports/verdict.json", "reports/junit.xml", "reports/allure-results"):
        assert word in screen, (word, screen)
    codes = screen[screen.index("exit codes"):]
    assert all(f"{c} " in codes for c in "0123"), screen
    assert "all pytest options: rackgate --help-pytest" in screen
    assert len(lines) <= SCREEN and max(map(len, lines)) <= 110


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_rackgates_then_pytests(flag, capsys):
    assert cli.main([flag]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"rackgate {__version__}", f"pytest {pytest.__version__}"]
