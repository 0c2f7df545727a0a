"""The GSM8K questions: a local directory holding the hub's rows, for racks without hub access.

The directory holds test.jsonl and train.jsonl, one JSON object a line with the hub's fields
(`question`, `answer`; the answer's last line is `#### N`), in the hub's order: lm-eval's
few-shot sampler draws by position, so the order is part of the task.
"""
from __future__ import annotations

from pathlib import Path

from .. import jsonl

SPLITS = ("test", "train")  # test: the questions asked; train: lm-eval's fewshot_split
FIELDS = ("question", "answer")


class DataError(Exception):
    """GSM8K data that cannot be used; str() is one line naming the file and the problem."""


def split_path(data_dir: str | Path, split: str) -> Path:
    return Path(data_dir).expanduser() / f"{split}.jsonl"


def read_split(data_dir: str | Path, split: str) -> list[dict[str, str]]:
    path = split_path(data_dir, split)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DataError(f"GSM8K data {path}: cannot read it ({e.strerror}); accuracy.gsm8k_dir must hold "
                        f"{' and '.join(s + '.jsonl' for s in SPLITS)}") from None
    try:
        lines = jsonl.objects(text)
    except jsonl.BadLine as e:
        raise DataError(f"GSM8K data {path}:{e.n}: {e.why}") from None
    rows = []
    for n, row in lines:
        if not all(isinstance(row.get(f), str) for f in FIELDS):
            raise DataError(f"GSM8K data {path}:{n}: a row needs string fields {', '.join(FIELDS)}")
        rows.append({f: row[f] for f in FIELDS})
    if not rows:
        raise DataError(f"GSM8K data {path}: no rows")
    return rows


def read_dir(data_dir: str | Path) -> dict[str, list[dict[str, str]]]:
    """Both splits of a local GSM8K directory, validated."""
    return {s: read_split(data_dir, s) for s in SPLITS}


def check_dir(data_dir: str | Path) -> None:
    """Raise DataError unless the directory holds both split files (cheap: no parsing)."""
    for s in SPLITS:
        p = split_path(data_dir, s)
        if not p.is_file():
            raise DataError(f"GSM8K data: {p} does not exist; accuracy.gsm8k_dir must hold "
                            f"{' and '.join(x + '.jsonl' for x in SPLITS)} (the hub's rows, one JSON object a line)")
