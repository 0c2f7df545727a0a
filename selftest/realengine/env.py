"""Where the real engine lives (scripts/real_engine/install.sh puts it there) and whether it must.

RACKGATE_REALENGINE_VENV   the venv with torch, transformers serve, aiperf, lm_eval
                           (default ~/.cache/rackgate/realengine-venv)
RACKGATE_CACHE             the converted model folders (default ~/.cache/rackgate/smollm2)
RACKGATE_REALENGINE=require   missing venv is a failure, not a skip (CI sets it after installing)
"""
from __future__ import annotations

import os
from pathlib import Path

INSTALL = "bash scripts/real_engine/install.sh"


def venv_dir() -> Path:
    env = os.environ.get("RACKGATE_REALENGINE_VENV")
    return Path(env) if env else Path.home() / ".cache" / "rackgate" / "realengine-venv"


def venv_bin() -> Path:
    return venv_dir() / "bin"


def required() -> bool:
    return os.environ.get("RACKGATE_REALENGINE", "") == "require"


def missing() -> str | None:
    """Why the real engine cannot run here, or None."""
    b = venv_bin()
    absent = [exe for exe in ("python", "transformers", "aiperf", "lm_eval") if not (b / exe).exists()]
    if absent:
        return f"real engine not installed ({', '.join(absent)} missing in {b}): run {INSTALL}"
    return None
