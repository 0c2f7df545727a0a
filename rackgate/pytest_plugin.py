"""rackgate as a pytest plugin: registered by entry point (pytest11, name `rackgate`), so every
pytest in an environment where rackgate is installed has it (`pytest -p rackgate` names it when
plugin autoloading is off). It brings:

- the suite's options (OPTIONS below), its fixtures (the modules of rackgate.fixtures) and its hooks
  (the modules of rackgate.hooks, one per concern), both in `pytest_plugins`, and the declared
  checks' collector (rackgate.checks.declared);
- the checks, collected from the package: with no test path on the command line, and no `testpaths`
  in force (pytest uses an ini's only when it runs in the ini's folder) or a run of the `rackgate`
  command (Command), the run collects rackgate/checks wherever the package is installed (a
  checkout's pyproject.toml names the same folder in `testpaths`);
- what the checkout's `[tool.pytest.ini_options]` holds, so that no ini is needed (a wheel run
  from any directory): the suite's markers, always; and for a run that collects only rackgate's
  checks, the suite's defaults (DEFAULTS: `-ra`, `--strict-markers`, `--junitxml=reports/junit.xml`,
  `--alluredir=reports/allure-results`, `--timeout=300`), each only where neither the command line
  nor the ini gave a value. Relative paths are from the directory the run started in;
- bad input as one line (pytest.UsageError: exit 2 from the `rackgate` command, 4 from pytest): an
  --atom-url that is not a URL, a --baseline that is not a baseline (check_options), and -m / -k
  leaving none of the checks collected ("no rackgate check matches -m 'gaet'; markers: ...").

Option forms. pytest settles its rootdir and ini from a first parse of the command line that does
not know plugin options: there the value of `--rack FILE` (space form) is taken for a test path.
The full parse (this plugin's options known) gives the value back to its option, and this plugin
decides "no test path given" from that parse (`Parser.parse_known_args`), so `--rack FILE` and
`--rack=FILE` select and configure the same run, from any directory. What the first parse settled
stays: the rootdir may then be the value's folder and the checkout's ini not found (the markers and
defaults above stand in for it); a plain pytest run whose rootdir moved that way gets a warning
naming the option (taken_for_paths), since pytest's cache goes to that rootdir. The `rackgate`
command writes every option of OPTIONS that takes a value as `--opt=value` (paths made absolute)
before pytest sees it, so its runs keep the rootdir of the directory they start in.

Test ids. A declared check's items are its row's, then their place -- `PLAT-DRIVER::node1`,
`SRV-BOOT::server` -- made by rackgate's own collector (rackgate/checks/declared.py, registered
below), the same whatever the rootdir, the form of the options, the directory or the install. A row
or an item given as a test path (`pytest PLAT-DRIVER`, `rackgate SRV-GOLDEN::node3-dp9`) is the
collector's path (rows_as_paths; rackgate/ids.py path_arg). pytest names a hand-written test by
its path from the rootdir (or, outside it, from the test path given), so this plugin names every
module of rackgate/checks itself (pytest_pycollect_makemodule): `rackgate/checks/<path in the
package>::<test>`. The ids are what the baseline's sources, `-m regression`, `rackgate fleet
--failed-only`, verdict.json, JUnit and Allure key on; rackgate/ids.py's check_id() reads an id
recorded before (the declared checks' `rackgate/checks/test_declared.py::test_plat_driver[node1]`,
`platform/...` under another rootdir, `tests/...` before the package move) as today's.
"""
from __future__ import annotations

import gc
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from . import baseline as bl
from .ids import CHECKS, ID_PREFIX, is_row_id, path_arg

# The suite's fixtures, then its hooks (each concern's hooks in rackgate.hooks, its fixtures and the
# state they share in rackgate.fixtures), one module per concern. The hooks' modules come after the
# fixtures' (they import them: a module imported before pytest registers it escapes assertion
# rewriting) and in the concerns' order, which is the order pytest calls their hooks in (last first).
pytest_plugins = [
    "rackgate.fixtures.rack",
    "rackgate.fixtures.nodes",
    "rackgate.fixtures.server",
    "rackgate.fixtures.order",
    "rackgate.fixtures.labels",
    "rackgate.fixtures.baseline",
    "rackgate.fixtures.regression",
    "rackgate.fixtures.fabric",
    "rackgate.fixtures.quick_gate",
    "rackgate.fixtures.bracket",
    "rackgate.hooks.rack",
    "rackgate.hooks.nodes",
    "rackgate.hooks.server",
    "rackgate.hooks.outcome",
    "rackgate.hooks.order",
    "rackgate.hooks.labels",
    "rackgate.hooks.baseline",
    "rackgate.hooks.regression",
    "rackgate.hooks.report",
    "rackgate.hooks.fabric",
    "rackgate.hooks.rackmap",
    "rackgate.hooks.ubench_plan",
    "rackgate.hooks.verdict_file",
    "rackgate.hooks.as_they_finish",
    "rackgate.hooks.bracket",
    "rackgate.hooks.tier",
    "rackgate.hooks.metrics",
    "rackgate.checks.declared",  # the declared checks' collector (one item per check and place)
]

# rackgate's options: name -> (metavar: None for a flag, help). `--verdict-file` is
# rackgate/hooks/verdict_file.py's (it owns the verdict file).
OPTIONS: dict[str, tuple[str | None, str]] = {
    "--rack": ("FILE", "rack file (TOML); default: the simulated rack (rackgate/sim/racks/sim.toml)"),
    "--sim-fault": ("NAME[@NODE[:GPU]]", "simulated rack only: inject a named fault (repeatable)"),
    "--sim-faults-list": (None, "list the simulated rack's faults and exit"),
    "--atom-url": ("URL", "attach to a running server instead of launching one (never stopped by the suite)"),
    "--served-model": ("NAME", "with --atom-url: the model name the server serves (default: the rack file's)"),
    "--gsm8k-dir": ("DIR", "GSM8K data (lm-eval's gsm8k JSONL: test.jsonl, train.jsonl) for the accuracy checks "
                           "(default: the rack file's accuracy.gsm8k_dir, else lm-eval's dataset)"),
    "--tokenizer": ("PATH", "the served model's tokenizer.json (or its folder) on this machine, for "
                            "SRV-STREAM-CONSISTENCY's token count (default: the rack file's serving.tokenizer)"),
    "--tier": ("NAME", "run a tier of rackgate/catalogue/tiers.toml (quick, standard, full): its rows, within its time budget"),
    "--tier-budget": ("SECONDS", "with --tier: this budget instead of the tier's"),
    "--metrics-file": ("FILE", "also write the verdict as a node_exporter textfile (Prometheus/OpenMetrics; docs/operations.md)"),
    "--record-baseline": (None, "store the facts this run observes as the baseline"),
    "--baseline": ("FILE", "baseline file (default: the rack file's)"),
}
VERDICT_FILE = "--verdict-file"
# The options whose value is a path on this machine (the rackgate command makes them absolute).
PATH_OPTIONS = ("--rack", "--baseline", "--metrics-file", "--gsm8k-dir", "--tokenizer", VERDICT_FILE, "--junitxml", "--alluredir")

MARKERS = (
    "platform: one node, before anything else (PLAT rows)",
    "fabric: the fabric between nodes (FAB rows)",
    "serving: the ATOM server and benchmark clients (SRV, BENCH rows)",
    "accuracy: accuracy gates (ACC rows)",
    "gate: run before any benchmark: brings the server up once, or attaches to one",
    "regression: compare with a recorded baseline after an image change",
    "slow: long runs (the full lm-eval GSM8K)",
    "row(id): the catalogue row a check implements",
    "survey: which trays of the rack can be used now (rackgate survey); only with -m survey",
)
FILTERWARNINGS = ("ignore::DeprecationWarning:allure_commons.*",)
JUNIT, ALLURE, TIMEOUT_S = "reports/junit.xml", "reports/allure-results", 300


class Command:
    """Registered by the `rackgate` command (`pytest.main(args, plugins=[Command()])`): there, no
    test path given means rackgate's checks, whatever `testpaths` an ini in force names."""


def value_options() -> tuple[str, ...]:
    """rackgate's options that take a value (the rest are flags)."""
    return (*(name for name, (metavar, _) in OPTIONS.items() if metavar is not None), VERDICT_FILE)


_GC_PAUSED: list[bool] = []  # [True] while this plugin holds the garbage collector paused


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """This plugin is registered (pytest's start-up, before the fixture modules above import): the
    garbage collector pauses until the run's tests start (`pytest_runtestloop`). Every run (each
    suite run, each `rackgate` command) imports ~150 modules and builds ~300 items, the sim and the
    checks' declarations, all of them kept for the whole run: collecting while they are made frees
    next to nothing, and collecting later walks them again (the interpreter's last collection at exit
    too) -- ~0.1 CPU s of a run's ~0.8 start-up (docs/performance.md, wave 11)."""
    if gc.isenabled() and not _GC_PAUSED:
        gc.disable()
        _GC_PAUSED.append(True)


def _resume_gc(freeze: bool) -> None:
    """The collector back on; with `freeze`, what start-up made moved to the permanent generation
    first (gc.freeze: never walked again; it lives as long as the run anyway)."""
    if _GC_PAUSED:
        _GC_PAUSED.clear()
        if freeze:
            gc.freeze()
        gc.enable()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """The tests start (after the collection; on an xdist controller, which collects nothing, before
    its workers' reports): the collector resumes."""
    _resume_gc(freeze=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    """A run that ended before its tests (--help, a usage error, a collection error): the collector
    resumes all the same (the `rackgate` command runs pytest inside its own process)."""
    _resume_gc(freeze=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("rackgate", "rackgate: hardware acceptance for AI inference racks")
    for name, (metavar, text) in OPTIONS.items():
        if metavar is None:
            g.addoption(name, action="store_true", help=text)
        elif name == "--sim-fault":
            g.addoption(name, metavar=metavar, action="append", default=[], help=text)
        else:
            g.addoption(name, metavar=metavar, default=None, help=text)


def taken_for_paths(invoked: Sequence[str], here: Path) -> list[str]:
    """`--opt VALUE` of rackgate's options whose VALUE is a path here: what pytest's first parse,
    which does not know rackgate's options, took for a test path when it settled the rootdir."""
    return [f"{a} {v}" for a, v in itertools.pairwise(invoked) if a in value_options() and (here / v).exists()]


# Files pytest settles its rootdir and ini by (an ini candidate, or setup.py).
PROJECT_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "setup.py")


def rootdir_moved(here: Path, root: Path) -> bool:
    """Whether a rootdir settled with a taken value (taken_for_paths) is not the one the run would
    have had from `here`: it is not here or above here, or a project file lies in here or a folder
    between here and it (where pytest would have settled). A checkout under /tmp with the value
    under /tmp too: the common folder /tmp became the rootdir, above the checkout's own ini."""
    here, root = here.resolve(), root.resolve()
    if here != root and root not in here.parents:
        return True
    for d in (here, *here.parents):
        if d == root:
            return False
        if any((d / name).is_file() for name in PROJECT_FILES):
            return True
    return False


def _in_checks(arg: str, here: Path) -> bool:
    path = (here / arg.split("::")[0]).resolve()
    return path == CHECKS or CHECKS in path.parents


def defaults(ns: object, config: pytest.Config) -> list[str]:
    """The suite's defaults that neither the command line nor the ini gave (ns: the parsed options)."""
    out = []
    if getattr(ns, "reportchars", None) in (None, "fE"):   # pytest's own default: not given
        out.append("-ra")
    if not getattr(ns, "strict_markers", True):
        out.append("--strict-markers")
    if getattr(ns, "xmlpath", "") is None:
        out.append(f"--junitxml={JUNIT}")
    if getattr(ns, "allure_report_dir", "") is None:
        out.append(f"--alluredir={ALLURE}")
    if getattr(ns, "timeout", "") is None and not config.getini("timeout"):
        out.append(f"--timeout={TIMEOUT_S}")
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """No test path given (by the full parse: rackgate's values are its options') and no testpaths
    in force, or a run of the rackgate command: collect rackgate/checks. A run of rackgate's checks
    only: the suite's defaults. A separate value that moved the rootdir: a warning naming it."""
    ns = parser.parse_known_args(args)
    here = Path(early_config.invocation_params.dir)
    paths = rows_as_paths(args, list(getattr(ns, "file_or_dir", None) or []), here)
    by_command = any(isinstance(p, Command) for p in early_config.pluginmanager.get_plugins())
    testpaths_in_force = bool(early_config.getini("testpaths")) and here.resolve() == early_config.rootpath.resolve()
    if not paths and (by_command or not testpaths_in_force):
        args.append(str(CHECKS))
        paths = [str(CHECKS)]
    if paths and all(_in_checks(p, here) for p in paths):
        args[:0] = defaults(ns, early_config)
    root = early_config.rootpath.resolve()
    taken = taken_for_paths(early_config.invocation_params.args, here)
    if taken and rootdir_moved(here, root):
        early_config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"rackgate: pytest settled its rootdir ({root}) taking {', '.join(taken)} for a test path: the run "
            "and its test ids are the same (the value is the option's), but pytest's cache goes to that rootdir "
            "and an ini here is not read; write the option as --opt=VALUE (or run the rackgate command) to keep "
            "the rootdir here"), stacklevel=2)


def rows_as_paths(args: list[str], paths: list[str], here: Path) -> list[str]:
    """A declared row (or one item of it) given as a test path -- `pytest PLAT-DRIVER`, `rackgate
    SRV-GOLDEN[node3-dp11]` -- as the path pytest resolves (rackgate.ids.path_arg), in `args` too
    (the last occurrences: an earlier one may be an option's value, `-k PLAT-DRIVER`); a file of
    that name here stays a file. Returns the test paths."""
    out = []
    for p in paths:
        if is_row_id(p) and not (here / p).exists():
            arg = path_arg(p)
            i = len(args) - 1 - args[::-1].index(p)
            args[i] = arg
            p = arg
        out.append(p)
    return out


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """A module of rackgate/checks is named `rackgate/checks/<its path in the package>`, whatever the
    rootdir (test ids above); its tests' ids follow from it."""
    path = Path(module_path).resolve()
    if CHECKS not in path.parents:
        return None
    return pytest.Module.from_parent(parent, path=module_path, nodeid=ID_PREFIX + path.relative_to(CHECKS).as_posix())


def check_options(opt: object) -> None:
    """Values of rackgate's options that cannot be right, as one line each (pytest.UsageError): an
    --atom-url that is no http(s) URL, a --baseline file that is not a rackgate baseline. (The rack
    file and --sim-fault are checked where they are read: rackgate/hooks/rack.py.)"""
    url = getattr(opt, "atom_url", None)
    if url is not None:
        parts = urlsplit(url)
        try:
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            port_ok = False
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            raise pytest.UsageError(f"--atom-url {url!r} is not a URL of a server: give http://HOST:PORT")
    path = getattr(opt, "baseline", None)
    if path and Path(path).exists():
        try:
            bl.load(path)
        except bl.BaselineError as e:
            raise pytest.UsageError(f"{e} (--baseline)") from None
        except OSError as e:
            raise pytest.UsageError(f"--baseline {path}: cannot read it: {e.strerror or e}") from None


def marker_names() -> list[str]:
    return [line.split(":", 1)[0] for line in MARKERS if "(" not in line.split(":", 1)[0]]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    check_options(config.option)
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    for line in FILTERWARNINGS:
        config.addinivalue_line("filterwarnings", line)


_COLLECTED = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before -m and -k deselect: how many of rackgate's checks this run collected (each module's
    path resolved once, not once per item: a run's ~300 items live in a handful of files)."""
    ours: dict[Path, bool] = {}
    for it in items:
        if it.path not in ours:
            ours[it.path] = CHECKS in Path(it.path).resolve().parents
    config.stash[_COLLECTED] = sum(ours[it.path] for it in items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """rackgate's checks collected and -m / -k leaving none of them: one line naming the expression
    and the markers (pytest.UsageError), never a run that judged nothing. Not on an xdist worker
    (each worker collects alone; the controller reports the run)."""
    config = session.config
    if session.items or not config.stash.get(_COLLECTED, 0) or hasattr(config, "workerinput"):
        return
    said = _selects_nothing(config)
    if said:
        raise pytest.UsageError(said)


def _selects_nothing(config: pytest.Config) -> str:
    """The one line for a -m / -k that left nothing to run ('' when neither was given)."""
    opt = config.option
    given = " ".join(f"{flag} {value!r}" for flag, value in (("-m", opt.markexpr), ("-k", opt.keyword)) if value)
    return f"no rackgate check matches {given}; markers: {', '.join(marker_names())}" if given else ""


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under xdist the controller collects nothing itself and each worker collects alone, so
    pytest_collection_finish cannot say it: a run whose -m / -k left no test gets the same one line
    here, and pytest's usage-error status (4, which `rackgate` turns into 2), not a silent 5."""
    config = session.config
    if exitstatus != pytest.ExitCode.NO_TESTS_COLLECTED or not config.pluginmanager.has_plugin("dsession"):
        return
    said = _selects_nothing(config)
    if said:
        sys.stderr.write(f"ERROR: {said}\n")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
