"""SRV-GOLDEN's golden set: the versioned prompt set, and the answers recorded into the baseline.

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
from ..probes.golden import Completion

KEY = "golden"


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


@dataclass(frozen=True)
class GoldenSet:
    version: str
    max_tokens: int
    top_k: int
    concurrency: int
    logprobs: bool                         # the server returned logprobs when it was recorded
    runs: int
    answers: dict[str, list[Completion]]   # prompt id -> every distinct recorded answer

    def describe(self) -> str:
        n = sum(len(v) for v in self.answers.values())
        return (f"prompt set v{self.version}, {len(self.answers)} prompts, max_tokens {self.max_tokens}, "
                f"{'top-' + str(self.top_k) + ' logprobs' if self.logprobs else 'tokens alone (no logprobs)'}, "
                f"{self.runs} recording(s), {n} distinct answers")


def recording(answers: list[Completion], max_tokens: int, top_k: int, concurrency: int) -> dict[str, Any]:
    """One recording's golden set, as the baseline stores it."""
    by: dict[str, list[dict[str, Any]]] = {}
    for a in answers:
        _add(by.setdefault(a.prompt, []), a.to_dict(), [a.rank] if a.rank is not None else [], 1)
    return {"version": prompt_set().version, "max_tokens": max_tokens, "top_k": top_k, "concurrency": concurrency,
            "logprobs": bool(answers) and all(a.has_logprobs for a in answers), "runs": 1, "answers": by}


def _add(into: list[dict[str, Any]], answer: dict[str, Any], ranks: list[int], seen: int) -> None:
    key = {k: v for k, v in answer.items() if k not in ("ranks", "seen")}
    for old in into:
        if {k: v for k, v in old.items() if k not in ("ranks", "seen")} == key:
            old["ranks"] = sorted(set(old.get("ranks", [])) | set(ranks))
            old["seen"] = int(old.get("seen", 1)) + seen
            return
    into.append({**key, "ranks": sorted(set(ranks)), "seen": seen})


SAME = ("version", "max_tokens", "top_k")


def merge(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """A second recording: its answers added to the first's (same prompt set, max_tokens and
    top_k), else it replaces it."""
    if not old or any(old.get(k) != new.get(k) for k in SAME):
        return new
    answers = {p: [dict(a) for a in xs] for p, xs in old.get("answers", {}).items()}
    for p, xs in new["answers"].items():
        for a in xs:
            _add(answers.setdefault(p, []), a, a.get("ranks", []), int(a.get("seen", 1)))
    return {**new, "runs": int(old.get("runs", 1)) + 1, "logprobs": bool(old.get("logprobs")) and new["logprobs"],
            "answers": answers}


class GoldenError(Exception):
    pass


def load(raw: dict[str, Any] | None) -> GoldenSet | None:
    if not raw:
        return None
    try:
        answers = {str(p): [Completion.from_dict(a) for a in xs] for p, xs in raw["answers"].items()}
        return GoldenSet(str(raw["version"]), int(raw["max_tokens"]), int(raw["top_k"]), int(raw["concurrency"]),
                         bool(raw["logprobs"]), int(raw.get("runs", 1)), answers)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise GoldenError(f"the baseline's golden set is not one rackgate wrote ({type(e).__name__}: {e})") from None
