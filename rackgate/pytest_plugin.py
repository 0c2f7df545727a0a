"""rackgate's command-line options, registered as an installed pytest plugin (entry point
pytest11) so that pytest knows them before it looks for conftest files.

Options as pytest users type them: pytest settles its rootdir and ini file before any plugin is
loaded, from a first parse that does not know plugin options -- so the value of `--served-model
/path/to/model` or `--alluredir /tmp/allure` (space form) is taken for a test path, the rootdir
moves away from the project and pyproject.toml (markers, timeouts, testpaths) is silently lost;
run from another directory, the ini is not found at all. When that happens to a run that uses
rackgate's options, the plugin starts the same run again, once, from the project directory, with
every option written `--opt=value` and every path made absolute (what the `rackgate` command
does); if the project's ini is still not in force, it stops with a message naming the cause.
"""
from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

RACKGATE_OPTIONS = ("--rack", "--atom-url", "--served-model", "--baseline", "--record-baseline", "--sim-fault",
                    "--gsm8k-dir", "--tokenizer")
REEXEC_ENV = "RACKGATE_REEXEC"


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("rackgate", "rackgate: hardware acceptance for AI inference racks")
    g.addoption("--rack", metavar="FILE", default=None,
                help="rack file (TOML); default: the simulated rack (racks/sim.toml)")
    g.addoption("--sim-fault", metavar="NAME[@NODE[:GPU]]", action="append", default=[],
                help="simulated rack only: inject a named fault (repeatable)")
    g.addoption("--sim-faults-list", action="store_true", help="list the simulated rack's faults and exit")
    g.addoption("--atom-url", metavar="URL", default=None,
                help="attach to a running server instead of launching one (never stopped by the suite)")
    g.addoption("--served-model", metavar="NAME", default=None,
                help="with --atom-url: the model name the server serves (default: the rack file's)")
    g.addoption("--gsm8k-dir", metavar="DIR", default=None,
                help="GSM8K data (lm-eval's gsm8k JSONL: test.jsonl, train.jsonl) for the accuracy checks "
                     "(default: the rack file's accuracy.gsm8k_dir, else lm-eval's dataset)")
    g.addoption("--tokenizer", metavar="PATH", default=None,
                help="the served model's tokenizer.json (or its folder) on this machine, for SRV-STREAM-CONSISTENCY's "
                     "token count (default: the rack file's serving.tokenizer)")
    g.addoption("--record-baseline", action="store_true", help="store the facts this run observes as the baseline")
    g.addoption("--baseline", metavar="FILE", default=None, help="baseline file (default: the rack file's)")


def _project() -> Path:
    return Path(__file__).resolve().parent.parent


def _uses_rackgate(args: list[str]) -> bool:
    return any(a.partition("=")[0] in RACKGATE_OPTIONS for a in args)


def _takes_value(parser: pytest.Parser, name: str) -> bool:
    # pytest 9 / 8 (the installed pytest's types know only one of them)
    ap = getattr(parser, "optparser", None) or parser._getparser()  # type: ignore[attr-defined]
    action = ap._option_string_actions.get(name)  # argparse's own table
    return action is not None and action.nargs != 0


PATH_OPTIONS = ("--rack", "--baseline", "--junitxml", "--alluredir", "--gsm8k-dir", "--tokenizer", "--basetemp", "--rootdir",
                "--confcutdir", "-c", "--config-file")


def rewrite(args: list[str], parser: pytest.Parser, cwd: Path) -> list[str]:
    """Every long option that takes a value written `--opt=value`; path options' values and test
    paths made absolute against cwd (the run moves to the project directory)."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        if a.startswith("-") and not eq and _takes_value(parser, a) and i + 1 < len(args):
            name, value, eq, i = a, args[i + 1], "=", i + 1
        if eq and name.startswith("-"):
            if name in PATH_OPTIONS and value:
                value = str((cwd / value).resolve())
            out += [f"{name}={value}"] if name.startswith("--") else [name, value]
        elif not a.startswith("-") and (cwd / a.split("::")[0]).exists():
            out.append(a if a.startswith("/") else str(cwd / a))
        else:
            out.append(a)
        i += 1
    return out


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """The project's ini lost (see the module's docstring): run again from the project, once."""
    import pytest
    project = _project()
    inipath = early_config.inipath
    here = Path(early_config.invocation_params.dir).resolve()
    if inipath is not None and inipath.parent == project and here == project:
        return
    invoked = list(early_config.invocation_params.args)
    if not _uses_rackgate(invoked) or not (project / "pyproject.toml").exists():
        return
    cwd = Path(early_config.invocation_params.dir)
    taken = [v for a, v in itertools.pairwise(invoked)
             if a.startswith("--") and "=" not in a and _takes_value(parser, a) and (cwd / v).exists()]
    cause = (f"pytest took {', '.join(map(repr, taken))} for a test path (an option's value written with a space)"
             if taken else f"pytest ran in {cwd}, outside the project")
    if os.environ.get(REEXEC_ENV):
        raise pytest.UsageError(f"rackgate's configuration ({project}/pyproject.toml) is not in force: {cause}; "
                                f"rootdir {early_config.rootpath}; write the option as --opt=value, or run "
                                "the 'rackgate' command")
    new = rewrite(invoked, parser, cwd)
    capman = early_config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.stop_global_capturing()
    print(f"rackgate: {cause}; running again from {project} as: pytest {' '.join(new)}", file=sys.stderr,
          flush=True)
    os.chdir(project)
    os.execve(sys.executable, [sys.executable, "-m", "pytest", *new], {**os.environ, REEXEC_ENV: "1"})
