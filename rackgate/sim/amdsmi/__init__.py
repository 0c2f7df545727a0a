"""Subcommands of the simulated `amd-smi`, one module each (static.py, list.py; fabric.py and
metric.py for the fabric area). A module declares

    SUBCOMMAND = "static"
    def run(args: list[str], node: dict, state: dict) -> int     # prints, returns the exit code

and is found by name, so areas add subcommands without editing each other's code.
"""
from __future__ import annotations

import importlib
import pkgutil


def handlers() -> dict:
    out = {}
    for m in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{m.name}")
        sub = getattr(mod, "SUBCOMMAND", None)
        if sub:
            out[sub] = mod.run
    return out


def json_out(args: list[str]) -> bool:
    return "--json" in args or "-j" in args or ("--format" in args and "json" in args)
