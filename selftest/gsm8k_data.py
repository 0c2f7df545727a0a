"""The one rule for self-tests that need real GSM8K rows (README, "Self-tests"): the directory is
RACKGATE_GSM8K_DIR, else ../shared/data/gsm8k beside the repository (the copy the sim reads);
where it lacks test.jsonl or train.jsonl those self-tests are skipped, naming the directory and
the variable, and RACKGATE_GSM8K=require (CI: .ci/run) makes that a failure instead. The
`gsm8k_dir` fixture (selftest/conftest.py) applies it."""
from __future__ import annotations

import json
import os
from pathlib import Path

from rackgate.sim.gsm8k import SHARED

FILES = ("test.jsonl", "train.jsonl")
# shortest(): the rows a self-test GSM8K directory keeps of each split
SHORT_TEST_ROWS = 100   # the questions asked (ACC-QUICK's seeded order runs over them)
SHORT_TRAIN_ROWS = 100  # lm-eval's fewshot_split: the pool its seeded sampler draws the 5 shots from


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


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def shortest(src: Path, dst: Path, test_rows: int = SHORT_TEST_ROWS, train_rows: int = SHORT_TRAIN_ROWS) -> Path:
    """A GSM8K directory of src's shortest rows, written to dst (a self-test's tmp, never committed):
    the test split's shortest questions (what is asked) and the train split's shortest question +
    answer rows (lm-eval's few-shot pool: every shot is a whole row), each kept in the hub's order
    and format. A real engine's cost is its prompt's prefill (a 5-shot prompt: ~1,020 SmolLM2
    tokens of the whole rows, ~490 of these; docs/performance.md, wave 9); the real-engine
    self-tests prove verdicts, not the model's accuracy, so they ask these."""
    dst.mkdir(parents=True, exist_ok=True)
    for split, n, size in (("test", test_rows, lambda r: len(r["question"])),
                           ("train", train_rows, lambda r: len(r["question"]) + len(r["answer"]))):
        rows = _rows(src / f"{split}.jsonl")
        keep = set(sorted(range(len(rows)), key=lambda i: (size(rows[i]), i))[:n])
        (dst / f"{split}.jsonl").write_text("".join(json.dumps(rows[i]) + "\n" for i in sorted(keep)), encoding="utf-8")
    return dst
