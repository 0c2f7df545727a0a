"""Run the acceptance suite as a user would (a pytest subprocess) and read its JUnit verdicts."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rackgate.pytest_plugin import value_options
from rackgate.report import junit
from rackgate.transport import interrupt
from rackgate.transport.runners import environ_copy

from .bytecode import PYCACHE  # where the suite runs' bytecode goes (user_env)

REPO = Path(__file__).resolve().parent.parent
# The plugins a suite run needs (its own and its declared pytest dependencies), loaded explicitly.
SUITE_PLUGINS = ("-p", "rackgate.pytest_plugin", "-p", "xdist.plugin", "-p", "pytest_timeout",
                 "-p", "allure_pytest.plugin",
                 # pytest's unraisable-exception plugin collects garbage five times at the end of
                 # every run (0.27 CPU s); the self-tests judge the suite's verdicts, not its warnings
                 "-p", "no:unraisableexception")


Outcome = junit.Verdict


@dataclass
class SuiteRun:
    rc: int
    stdout: str
    stderr: str
    outcomes: dict[str, Outcome]
    verdict: dict | None = None     # the run's verdict.json (validated against its schema)
    verdict_problem: str = ""       # what is wrong with it: missing, unreadable, off the schema

    def ids(self, status: str) -> set[str]:
        return {k for k, o in self.outcomes.items() if o.status == status}

    @property
    def not_passed(self) -> set[str]:
        return {k for k, o in self.outcomes.items() if o.status != "passed"}


# One reader of JUnit results for the suite and its self-tests (a teardown error after a pass
# counts as the worse of the two entries).
parse_junit = junit.read


def _joined(args) -> list[str]:
    """`--rack X` -> `--rack=X` (every rackgate option with a value): a separate value that is a
    path outside the repo would become pytest's rootdir (rackgate/pytest_plugin.py's docstring)."""
    out, it = [], iter(args)
    for a in it:
        out.append(f"{a}={next(it)}" if a in value_options() else a)
    return out


def user_env() -> dict[str, str]:
    """This process's environment as a user's shell has it: without what pytest and xdist set for
    the self-test run itself (a suite run started by a self-test on an xdist worker is no worker).
    Where the user writes no bytecode, the runs keep theirs in PYCACHE instead: otherwise every
    one of the self-tests' ~200 suite runs (and the sim's Python tools in each) compiled every
    module it imports from source again, ~0.5 CPU s a run (docs/performance.md, wave 8)."""
    env = {k: v for k, v in environ_copy().items()
           if not k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))}
    if env.get("PYTHONDONTWRITEBYTECODE") and not env.get("PYTHONPYCACHEPREFIX"):
        del env["PYTHONDONTWRITEBYTECODE"]
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def dist_mode(config) -> str:
    """How xdist hands this run's tests out ("no" outside xdist). A worker's own config says
    `--dist no`: the controller passes the real mode (selftest/conftest.py pytest_configure_node);
    a worker without it answers "unknown"."""
    if not hasattr(config, "workerinput"):
        return "no"
    return config.workerinput.get("rackgate_dist", "unknown")


def suite_command(tmp_path: Path, args: tuple[str, ...], allure: bool) -> list[str]:
    """The suite run's command line: its JUnit and verdict file in `tmp_path`; with `allure`, its Allure
    results in tmp_path/allure. Without, it writes none (`--alluredir=` empty, after the checkout's
    ini's reports/allure-results: allure-pytest writes nothing for an empty value): the report's
    run-level fact plots were ~0.75 CPU s of every platform run (matplotlib ~0.4 CPU s to import,
    ~0.1 a plot). A self-test that reads the results asks for them."""
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *SUITE_PLUGINS, "-q",
            f"--junitxml={tmp_path / 'junit.xml'}", f"--alluredir={tmp_path / 'allure' if allure else ''}",
            f"--verdict-file={tmp_path / 'verdict.json'}", *_joined(args)]


def suite_env(extra: dict | None = None) -> dict[str, str]:
    """The suite run's environment: the user's (user_env), `extra` over it, and
    - only the suite's own plugins: unrelated ones installed on the machine (hypothesis, anyio,
      benchmark) cost seconds of start-up per run, and the fault matrix makes dozens of runs;
    - bytecode written and reused: a machine that sets PYTHONDONTWRITEBYTECODE (this one does)
      otherwise compiles rackgate's ~180 modules and rewrites the checks' asserts in every run and
      every sim tool process: ~0.3 CPU s of each run's start-up (docs/performance.md, wave 8);
      `user_env` keeps it in PYCACHE, outside the checkout; `extra` may set the variable back."""
    base = user_env()
    return {**base, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **(extra or {})}


def run_suite(tmp_path: Path, *args: str, timeout: float = 300, env: dict | None = None,
              allure: bool = False) -> SuiteRun:
    """One suite run in `tmp_path` (suite_command: `allure` for its Allure results in tmp_path/allure)."""
    junit = tmp_path / "junit.xml"
    if "--baseline" not in args and not any(a.startswith("--baseline=") for a in args):
        # Hermetic: a baseline a developer recorded in reports/ must not turn into comparisons here.
        # The shipped sim rack's own baseline (rackgate/sim/racks/sim-baseline.json: its healthy boot's link
        # training, tracked) is part of the sim, as a real rack's recorded healthy boot is.
        sim = "--rack" not in args and not any(a.startswith("--rack=") for a in args)
        args = (*args, f"--baseline={REPO / 'rackgate/sim/racks/sim-baseline.json' if sim else tmp_path / 'no-baseline.json'}")
    cmd = suite_command(tmp_path, args, allure)
    env = suite_env(env)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # TERM first: the suite ends as on Ctrl-C (the processes it started stopped, its reports
        # written), within its own bound (rackgate/transport/interrupt.py BOUND_S).
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=interrupt.BOUND_S + 5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        err += f"\nselftest harness: the suite run did not finish within {timeout:g}s and was stopped"
    outcomes = parse_junit(junit) if junit.exists() else {}
    verdict, problem = read_verdict(tmp_path / "verdict.json") if outcomes else (None, "")
    return SuiteRun(proc.returncode, out, err, outcomes, verdict, problem)


def selected(tmp_path: Path, *args: str, timeout: float = 120) -> set[str]:
    """The items a suite run of `args` would run (`--collect-only`, the plugin's selection included:
    markers, the baseline's producers), without running them: no sim is built, nothing launched.
    For a self-test that proves which items a selection picks after another run proved them passing."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(suite_command(tmp_path, ("--collect-only", *args), False), cwd=REPO, env=suite_env(),
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    return {line for line in p.stdout.splitlines() if "::" in line and not line.startswith(" ")}


def read_verdict(path: Path) -> tuple[dict | None, str]:
    """A run's verdict.json and what is wrong with it against the shipped schema ("" if nothing)."""
    import json

    import jsonschema

    from rackgate.report import verdict_file
    try:
        data = verdict_file.read(path)
        jsonschema.validate(data, json.loads(verdict_file.SCHEMA.read_text()))
    except ValueError as e:
        return None, str(e)
    except jsonschema.ValidationError as e:
        return None, f"{path}: off the schema: {e.message} at {'/'.join(map(str, e.absolute_path))}"
    return data, ""
