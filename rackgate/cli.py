"""`rackgate [pytest options]`: the suite from any directory; `rackgate SUBCOMMAND ...`: a tool.

Runs pytest in the project directory with path options made absolute and written as
`--opt=value` (pytest would otherwise take a separate value for a test path and lose the
suite's configuration).

Subcommands: add a function `(argv: list[str]) -> int` to SUBCOMMANDS (name -> (function, one-line
help)); `rackgate NAME args...` calls it, and `rackgate help` lists them.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

PATH_OPTIONS = ("--rack", "--baseline", "--junitxml", "--alluredir")


def normalize(argv: list[str], cwd: Path) -> list[str]:
    out, it = [], iter(argv)
    for a in it:
        name, eq, value = a.partition("=")
        if name in PATH_OPTIONS:
            if not eq:
                value = next(it, None)
                if value is None:
                    raise SystemExit(f"rackgate: {name} needs a value")
            a = f"{name}={(cwd / value).resolve()}"
        out.append(a)
    return out


def _help(argv: list[str]) -> int:
    print("rackgate [pytest options]      run the suite (e.g. rackgate --rack FILE -m gate)")
    for name, (_, text) in sorted(SUBCOMMANDS.items()):
        print(f"rackgate {name:<20} {text}")
    return 0


def _module(name: str) -> Callable[[list[str]], int]:
    """A subcommand living in a module of the package as its main(argv) (imported when called)."""
    def run(argv: list[str]) -> int:
        import importlib
        return int(importlib.import_module(name, __package__).main(argv))
    return run


# name -> (function(argv) -> exit status, one-line help). A new subcommand is one line here.
SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "help": (_help, "list the subcommands"),
    "compare": (_module(".baseline.cli"), "OLD.json NEW.json: the regression table from two recorded runs"),
    "survey": (_module(".survey.cli"), "--rack RACK.toml [--pick N] [--write-rack FILE]: which trays can be used now"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return int(SUBCOMMANDS[argv[0]][0](argv[1:]))
    import pytest

    import rackgate
    project = Path(rackgate.__file__).resolve().parent.parent
    if not (project / "conftest.py").exists():
        print(f"rackgate: the suite's tests are not next to the package ({project}); "
              "install it from a checkout with pip install -e .", file=sys.stderr)
        return 2
    args = normalize(argv, Path.cwd())
    os.chdir(project)
    return int(pytest.main(args))


if __name__ == "__main__":
    sys.exit(main())
