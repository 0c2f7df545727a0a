"""`rackgate [pytest options]`: the suite from any directory; `rackgate SUBCOMMAND ...`: a tool.

Runs pytest in this process, in the current directory, with the package's checks
(rackgate/pytest_plugin.py collects them when no test path is given) and every rackgate option that
takes a value written `--opt=value`, path values made absolute (pytest's first look at the command
line would otherwise take a separate value for a test path and settle its rootdir from it).
reports/ (junit.xml, allure-results, verdict.json) is relative to the current directory.

Subcommands: add a function `(argv: list[str]) -> int` to SUBCOMMANDS (name -> (function, one-line
help)); `rackgate NAME args...` calls it, and `rackgate --help` (`rackgate help`) lists them in its
usage (USAGE_TEXT: one screen, rackgate's own; pytest's help is `rackgate --help-pytest`). `rackgate
--version` names rackgate's version, then pytest's.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .verdicts import Verdict

# pytest marks the plugin's package for assertion rewriting after this command imported it: its
# warning says so about the package it runs in (the modules imported later are rewritten).
QUIET = ("-W", "ignore:Module already imported so cannot be rewritten; rackgate:pytest.PytestAssertRewriteWarning")

# rackgate's exit codes (README, docs/fleet.md): distinct, so a scheduler can tell them apart; a
# run's verdict says its own (`Verdict.exit_code`), a usage or rack-file error is 2.
ALL_PASSED, FINDING, UNOBSERVED = Verdict.PASSED.exit_code, Verdict.FAILED.exit_code, Verdict.UNOBSERVED.exit_code
USAGE = 2


def exit_code(pytest_rc: int, verdict: Mapping[str, Any] | None) -> int:
    """pytest's exit status + the run's verdict file -> rackgate's exit code: 1 only with a finding
    about the rack; failures without one (could not observe, a suite error, a run cut short) are 3;
    a usage or rack-file error (pytest's 4) or a selection that ran nothing (5) is 2."""
    if pytest_rc in (4, 5):
        return USAGE
    try:
        said = Verdict.read(str(verdict["verdict"])) if verdict is not None else None
    except (KeyError, ValueError):
        said = Verdict.UNOBSERVED   # a verdict file that says no verdict: nothing judged for sure
    if said is Verdict.FAILED:
        return said.exit_code
    if pytest_rc == 0 and said in (None, Verdict.PASSED):
        return ALL_PASSED
    return UNOBSERVED


def normalize(argv: list[str], cwd: Path) -> list[str]:
    """Every rackgate option that takes a value (and --junitxml, --alluredir) as `--opt=value`,
    path values made absolute against cwd; SystemExit naming an option given no value."""
    from .pytest_plugin import PATH_OPTIONS, value_options
    joined = (*value_options(), *PATH_OPTIONS)
    out, it = [], iter(argv)
    for a in it:
        name, eq, value = a.partition("=")
        if name in joined:
            if not eq:
                given = next(it, None)
                if given is None:
                    raise SystemExit(f"rackgate: {name} needs a value")
                value = given
            if name in PATH_OPTIONS and value:
                value = str((cwd / value).resolve())
            a = f"{name}={value}"
        out.append(a)
    return out


HELP, HELP_PYTEST, VERSION = ("-h", "--help"), "--help-pytest", ("-V", "--version")

# rackgate's usage: the first screen of `rackgate --help` (24 lines with the subcommands).
USAGE_TEXT = """\
usage: rackgate [--rack FILE] [-m MARKERS] [options] [TEST PATH...]   run rackgate's checks (pytest)
       rackgate SUBCOMMAND [ARGS]                                    a tool (below)
Hardware acceptance for AI inference racks: each failure of the catalogue is a check that passes
on health, fails on its fault, or says it could not observe (which node, which tool).

subcommands:
{subcommands}
main options:
  --rack FILE                rack file (TOML); default: the simulated rack
  --atom-url URL             attach to a running server (never stopped) instead of launching one
                             from the rack file's [launch]; --served-model NAME with it
  -m platform                one node, before anything else    -m fabric      the fabric between nodes
  -m gate                    before any benchmark    --tier quick|standard|full  rows within a time budget
  -m regression              after an image change: compare with --baseline FILE (--record-baseline)
reports (where it starts): reports/verdict.json (--verdict-file), reports/junit.xml, reports/allure-results
exit codes: 0 every check passed; 1 a finding about the rack; 2 usage or rack-file error (nothing
  judged); 3 no finding, but something could not be observed
all pytest options: rackgate --help-pytest      version: rackgate --version"""


def usage() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    subs = "\n".join(f"  {name:<{width}}  {text}" for name, (_, text) in SUBCOMMANDS.items())
    return USAGE_TEXT.format(subcommands=subs)


def version() -> str:
    """rackgate's version (its installed distribution's, else the package's), then pytest's."""
    import importlib.metadata

    import pytest

    from . import __version__
    try:
        mine = importlib.metadata.version("rackgate")
    except importlib.metadata.PackageNotFoundError:
        mine = __version__
    return f"rackgate {mine}\npytest {pytest.__version__}"


def _help(argv: list[str]) -> int:
    print(usage())
    return 0


def _module(name: str) -> Callable[[list[str]], int]:
    """A subcommand living in a module of the package as its main(argv) (imported when called)."""
    def run(argv: list[str]) -> int:
        import importlib
        return int(importlib.import_module(name, __package__).main(argv))
    return run


# name -> (function(argv) -> exit status, one-line help). A new subcommand is one line here.
SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "fleet": (_module(".fleet.cli"), "RACK.toml... [--scheduler local|slurm] [-- pytest args]: one run per rack, one report"),
    "survey": (_module(".survey.cli"), "--rack RACK.toml [--pick N] [--write-rack FILE]: which trays can be used now"),
    "watch": (_module(".watch.cli"), "[--every S] [--state DIR] [SUITE ARGS]: re-run what expired or failed, on a cadence"),
    "status": (_module(".report.status"), "[VERDICT.json|DIR...]: green, failed, unobserved, expired per node and GPU"),
    "npd": (_module(".report.npd"), "gpu-ras|link|serving [--verdict FILE] [--node N]: a node-problem-detector plugin (0/1/2)"),
    "compare": (_module(".baseline.cli"), "OLD.json NEW.json: the regression table from two recorded runs"),
    "help": (_help, "this usage (rackgate --help)"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return int(SUBCOMMANDS[argv[0]][0](argv[1:]))
    import pytest

    from .pytest_plugin import Command
    if any(a in HELP for a in argv):
        return _help(argv)
    if any(a in VERSION for a in argv):
        print(version())
        return ALL_PASSED
    if HELP_PYTEST in argv:
        return int(pytest.main([*QUIET, "--help"], plugins=[Command()]))
    try:
        args = normalize(argv, Path.cwd())
    except SystemExit as e:
        print(e, file=sys.stderr)
        return USAGE
    verdict_path = _verdict_path(args, Path.cwd())
    if verdict_path is not None and verdict_path.exists():
        verdict_path.unlink()  # an old run's verdict must not stand for this one
    rc = int(pytest.main([*QUIET, *args], plugins=[Command()]))
    from .report import verdict_file
    try:
        verdict = verdict_file.read(verdict_path) if verdict_path is not None else None
    except ValueError:
        verdict = None
    return exit_code(rc, verdict)


def _verdict_path(args: list[str], cwd: Path) -> Path | None:
    """The run's verdict file (rackgate/hooks/verdict_file.py): --verdict-file, else
    reports/verdict.json, from the directory the run starts in; None for `--verdict-file=` (none)."""
    value = next((a.partition("=")[2] for a in reversed(args) if a.startswith("--verdict-file=")),
                 "reports/verdict.json")
    return cwd / value if value else None


if __name__ == "__main__":
    sys.exit(main())
