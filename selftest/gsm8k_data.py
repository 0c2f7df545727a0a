"""The one rule for self-tests that need real GSM8K rows (README, "Self-tests"): the directory is
RACKGATE_GSM8K_DIR, else ../shared/data/gsm8k beside the repository (the copy the sim reads);
where it lacks test.jsonl or train.jsonl those self-tests are skipped, naming the directory and
the variable, and RACKGATE_GSM8K=require (CI: .ci/run) makes that a failure instead. The
`gsm8k_dir` fixture (selftest/conftest.py) applies it."""
from __future__ import annotations

import os
from pathlib import Path

from rackgate.sim.gsm8k import SHARED

FILES = ("test.jsonl", "train.jsonl")


def location() -> Path:
    return Path(os.environ.get("RACKGATE_GSM8K_DIR") or SHARED)


def missing(directory: Path) -> str:
    """Why the directory cannot serve ('' when it holds both splits)."""
    absent = [f for f in FILES if not (directory / f).is_file()]
    if not absent:
        return ""
    return (f"no GSM8K rows: {directory} lacks {' and '.join(absent)} (set RACKGATE_GSM8K_DIR to a directory "
            "holding lm-eval's GSM8K test.jsonl and train.jsonl)")


def required() -> bool:
    return os.environ.get("RACKGATE_GSM8K") == "require"
