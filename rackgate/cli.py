"""`rackgate [pytest options]`: the suite from any directory.

Runs pytest in the project directory with path options made absolute and written as
`--opt=value` (pytest would otherwise take a separate value for a test path and lose the
suite's configuration).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

PATH_OPTIONS = ("--rack", "--baseline", "--junitxml", "--alluredir")
# `rackgate NAME ...`: subcommands other than a suite run, each a module with main(argv) -> int.
SUBCOMMANDS = {
    "compare": (".baseline.cli", "rackgate compare OLD.json NEW.json: the regression table from two recorded runs"),
    "survey": (".survey.cli", "rackgate survey --rack RACK.toml [--pick N]: which trays can be used now"),
}


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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    sub = SUBCOMMANDS.get(argv[0]) if argv else None
    if sub is not None:
        module, _ = sub
        import importlib
        return importlib.import_module(module, __package__).main(argv[1:])
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
