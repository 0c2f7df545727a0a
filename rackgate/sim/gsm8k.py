"""The simulated model's GSM8K: it answers GSM8K-format questions in K3's style (working, then
"#### N"), right with a configurable probability, deterministically per question.

It serves the data the rack's quick gate and lm-eval read: the shared GSM8K copy beside the
repository when there is one, else a small generated set of its own in the same format (written
once, atomically, under the system temp dir). Whether a question is answered right is a hash of
the question against state["server"]["accuracy"], so runs are reproducible and the share of
right answers over many questions is the configured accuracy.

Answers vary their form the way a real model's do, in forms lm-eval's filters must handle:
"#### 1,234", "#### 18." and text after the number; a small share of answers drop the "####"
line (lm-eval's strict-match reads those as [invalid]; flexible-extract still finds the number).
Faults (state["server"]["faults"], read as ServerState.faults.output):
  answer-format  most answers drop the "####" line: strict-match collapses, flexible does not
  fake-eplb      the router is uniform: the output is not the model's, the numbers are noise
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import re
import tempfile
from pathlib import Path

import rackgate

from .state import ServerState, this_node

SHARED = Path(rackgate.__file__).resolve().parents[2] / "shared" / "data" / "gsm8k"
GENERATED_VERSION = 1
_CALC = re.compile(r"<<[^>]*>>")
_FINAL = re.compile(r"#### (.*)$", re.S)
UNPARSED_SHARE = 0.25  # of the answers not scored right: the "####" line missing, not a wrong number


def data_dir() -> Path:
    """Where the sim's GSM8K lives: the shared copy, else the generated set (made on first use)."""
    if (SHARED / "test.jsonl").is_file() and (SHARED / "train.jsonl").is_file():
        return SHARED
    return generate(Path(tempfile.gettempdir()) / f"rackgate-sim-gsm8k-v{GENERATED_VERSION}")


# --- a generated set, for machines without the shared copy ----------------------------------
_TEMPLATES = [
    ("{name} bakes {a} loaves a day for {d} days and gives away {s} of them. How many loaves does "
     "{name} have left?",
     "{name} bakes {a} * {d} = <<{a}*{d}={x}>>{x} loaves.\nAfter giving away {s}, {name} has {x} - {s} = "
     "<<{x}-{s}={y}>>{y} loaves left.\n#### {y}"),
    ("A box holds {a} pencils. {name} buys {d} boxes and {s} loose pencils. How many pencils does "
     "{name} have?",
     "The boxes hold {a} * {d} = <<{a}*{d}={x}>>{x} pencils.\nWith the loose ones, {name} has {x} + {s} = "
     "<<{x}+{s}={y}>>{y} pencils.\n#### {y}"),
    ("{name} earns ${a} an hour and works {d} hours, then spends ${s} on lunch. How many dollars "
     "does {name} keep?",
     "{name} earns {a} * {d} = $<<{a}*{d}={x}>>{x}.\nAfter lunch, {name} keeps {x} - {s} = $<<{x}-{s}={y}>>{y}.\n"
     "#### {y}"),
]
_NAMES = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Farid", "Grace", "Hiro", "Ines", "Jon"]


def _generated_rows(n: int, rnd: random.Random) -> list[dict]:
    rows = []
    for _ in range(n):
        q, a = rnd.choice(_TEMPLATES)
        v = {"name": rnd.choice(_NAMES), "a": rnd.randint(3, 60), "d": rnd.randint(2, 40)}
        v["x"] = v["a"] * v["d"]
        v["s"] = rnd.randint(1, v["x"] - 1)
        v["y"] = v["x"] - v["s"] if "-" in a.split("\n")[1] else v["x"] + v["s"]
        rows.append({"question": q.format(**v), "answer": a.format(**v)})
    return rows


def generate(target: Path, n_test: int = 300, n_train: int = 100) -> Path:
    """Write a generated GSM8K-format set (test.jsonl, train.jsonl) to target, once."""
    if (target / "test.jsonl").is_file() and (target / "train.jsonl").is_file():
        return target
    rnd = random.Random(GENERATED_VERSION)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    for split, n in (("test", n_test), ("train", n_train)):
        (tmp / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _generated_rows(n, rnd)))
    try:
        tmp.rename(target)
    except OSError:  # another process made it first
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()
    return target


# --- answering -------------------------------------------------------------------------------
@functools.cache
def answers(directory: str) -> dict[str, str]:
    """question -> reference answer, over both splits of a GSM8K directory."""
    out = {}
    for split in ("test", "train"):
        p = Path(directory) / f"{split}.jsonl"
        if p.is_file():
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    out[row["question"].strip()] = row["answer"]
    return out


def _u(question: str, salt: str = "") -> float:
    """A uniform number in [0, 1) fixed by the question: the model's luck on it."""
    h = hashlib.sha256((salt + question).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2 ** 64


def _number(text: str) -> int | float | None:
    try:
        v = float(text.replace(",", "").replace("$", "").strip().rstrip("."))
    except ValueError:
        return None
    return int(v) if v.is_integer() else v


def _fmt(v: int | float, style: float) -> str:
    s = f"{v:,}" if abs(v) >= 1000 and style < 0.5 else str(v)
    if style > 0.9:
        s += "."  # "#### 18." : lm-eval's regexes_to_ignore strips the trailing period
    return s


def answer(question: str, reference: str, accuracy: float, faults: set[str] = frozenset()) -> str:
    """K3's answer to one question: the working (without the dataset's <<calc>> notes), then the
    final line; right when the question's luck is below the accuracy."""
    m = _FINAL.search(reference)
    gold = _number(m.group(1)) if m else None
    working = _CALC.sub("", reference[:m.start()] if m else reference).strip()
    luck, style = _u(question), _u(question, "style")
    right = luck < accuracy and "fake-eplb" not in faults
    value = gold
    if gold is None:
        value = 0
    elif not right:
        delta = 1 + int(_u(question, "delta") * 9)
        value = gold + delta if _u(question, "sign") < 0.5 or gold - delta < 0 else gold - delta
    if "fake-eplb" in faults:
        # uniform routing: fluent-looking text whose numbers are not the model's
        return f"{working.split(chr(10))[0]}\nSo the total is {value}.\n#### {value}"
    drop_marker = "answer-format" in faults and style < 0.8
    if not right and not drop_marker and _u(question, "form") < UNPARSED_SHARE:
        # a format miss: the right number, no "####" line
        return f"{working}\nThe answer is {_fmt(gold if gold is not None else value, 0.6)}."
    if drop_marker:
        return f"{working}\nThe answer is {_fmt(value, 0.6)}."
    tail = "\n\nSo the answer is {}.".format(_fmt(value, 0.6)) if 0.8 < style <= 0.9 else ""
    return f"{working}\n#### {_fmt(value, style)}{tail}"


@functools.cache
def _server_state() -> tuple[float, frozenset, str]:
    """(accuracy, server faults, data dir) of the sim server this process is."""
    accuracy, faults, directory = 0.96, frozenset(), ""
    if "RACKGATE_SIM_NODE" in os.environ:
        _, _, state = this_node()
        srv = ServerState.from_json(state.get("server", {}))
        accuracy, faults, directory = srv.accuracy, srv.behaviours().output, srv.gsm8k_dir
    return accuracy, faults, directory or str(data_dir())


def answerer(prompt: str) -> str | None:
    """The sim model's ANSWERERS entry: a GSM8K-format prompt (a chat turn, or a few-shot
    completion prompt ending in "Question: ...\\nAnswer:") -> the continuation, else None."""
    end = prompt.rstrip()
    if not end.endswith("\nAnswer:"):
        return None
    start = end.rfind("Question: ")
    if start < 0:
        return None
    question = end[start + len("Question: "):-len("\nAnswer:")].strip()
    accuracy, faults, directory = _server_state()
    ref = answers(directory).get(question)
    if ref is None:
        return None
    text = answer(question, ref, accuracy, faults)
    if prompt.count("Question: ") > 1:
        # a few-shot completion prompt: a base model goes on to write the next shot, and the
        # request's stop strings ("Question:") cut it there
        return " " + text + "\n\nQuestion:"
    return text
