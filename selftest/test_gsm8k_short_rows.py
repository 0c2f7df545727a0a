"""The real-engine self-tests' GSM8K directory (selftest/gsm8k_data.shortest): the shortest rows of
each split, in the hub's order and format -- lm-eval's few-shot sampler draws by position, and
the suite reads the directory as it reads a rack's."""
from __future__ import annotations

import json

import pytest

from rackgate.gsm8k.data import read_dir

from . import gsm8k_data

pytestmark = pytest.mark.unit


def _row(q: str, a: str) -> dict[str, str]:
    return {"question": q, "answer": f"{a}\n#### {len(a)}"}


def _write(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")  # a blank last line, as files end


def test_the_shortest_rows_in_the_hubs_order(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "short"
    src.mkdir()
    # test: what is asked, so the question's length; train: a whole shot, so question + answer
    test = [_row("q" * 50, "a"), _row("q" * 5, "a" * 500), _row("q" * 30, "a"), _row("q" * 10, "a")]
    train = [_row("q" * 5, "a" * 500), _row("q" * 40, "a" * 40), _row("q" * 90, "a"), _row("q" * 10, "a" * 10),
             _row("q" * 20, "a" * 20)]
    _write(src / "test.jsonl", test)
    _write(src / "train.jsonl", train)
    assert gsm8k_data.shortest(src, dst, test_rows=2, train_rows=3) == dst
    rows = read_dir(dst)
    assert rows["test"] == [test[1], test[3]]  # the two shortest questions, in the file's order
    assert rows["train"] == [train[1], train[3], train[4]]  # the three shortest rows, in the file's order
    assert gsm8k_data.missing(dst) == ""


def test_ties_keep_the_first_rows(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "short"
    src.mkdir()
    same = [_row(f"question {i}", "a") for i in range(5)]
    _write(src / "test.jsonl", same)
    _write(src / "train.jsonl", same)
    rows = read_dir(gsm8k_data.shortest(src, dst, test_rows=3, train_rows=2))
    assert rows["test"] == same[:3] and rows["train"] == same[:2]
