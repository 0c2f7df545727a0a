"""SRV-GOLDEN's golden set: the versioned prompt set, and the answers recorded into the baseline
(its types and reading, `GoldenSet`, `load`, are rackgate/probes/golden.py's: SRV-GOLDEN's probe reads it).

The baseline file holds it under "sets" -> "golden" (rackgate.baseline.write):
`{"version", "max_tokens", "top_k", "concurrency", "logprobs", "runs", "answers": {prompt id:
[{"prompt", "text", "tokens", "logprobs", "top", "finish", "ranks": [...], "seen": n}]}}`:
every distinct answer a healthy recording gave, with the ranks that gave it and how often.
Recording again (same rack and image, the same prompt set version, max_tokens and top_k) merges:
the answers are added, so the band learned from them (rackgate.gates.golden.band) widens with
what repeated healthy recordings moved; anything else replaces the golden set.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ..atom.fanout import Ask
from ..probes.golden import KEY, Completion, GoldenError, GoldenSet, add, load
from ..probes.golden import recording as _recording

__all__ = ["KEY", "GoldenError", "GoldenSet", "PromptSet", "asks", "load", "merge", "prompt_set", "recording"]


@dataclass(frozen=True)
class PromptSet:
    version: str
    prompts: dict[str, str]   # id -> text, in the file's order


@cache
def prompt_set() -> PromptSet:
    raw = tomllib.loads(resources.files("rackgate.baseline").joinpath("golden_prompts.toml").read_text())
    return PromptSet(str(raw["version"]), {p["id"]: p["text"] for p in raw["prompt"]})


def asks(ps: PromptSet, targets: list[int | None]) -> list[Ask]:
    """Every prompt asked of every target (a rank, or None: the server picks), prompt by prompt:
    each prompt's asks side by side, so a batch of `concurrency` of them keeps every rank busy
    (rank by rank, a batch held two ranks and the others idled) and a server that spreads by
    least requests hands one prompt's repeats to different ranks."""
    return [Ask(text, r) for text in ps.prompts.values() for r in targets]


def recording(answers: list[Completion], max_tokens: int, top_k: int, concurrency: int) -> dict[str, Any]:
    """One recording's golden set of this rackgate's prompt set, as the baseline stores it."""
    return _recording(answers, prompt_set().version, max_tokens, top_k, concurrency)


SAME = ("version", "max_tokens", "top_k")


def merge(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """A second recording: its answers added to the first's (same prompt set, max_tokens and
    top_k), else it replaces it."""
    if not old or any(old.get(k) != new.get(k) for k in SAME):
        return new
    answers = {p: [dict(a) for a in xs] for p, xs in old.get("answers", {}).items()}
    for p, xs in new["answers"].items():
        for a in xs:
            add(answers.setdefault(p, []), a, a.get("ranks", []), int(a.get("seen", 1)))
    return {**new, "runs": int(old.get("runs", 1)) + 1, "logprobs": bool(old.get("logprobs")) and new["logprobs"],
            "answers": answers}
