"""The sim's launch and benchmark commands (the runbook's, with the sim's modules in place of
ATOM's), and the structured edits faults make to them.

A command is parsed once into its leading `VAR=value` assignments and its words; a fault changes
it with edits (`Drop("--flag")`, `Set("--flag", "value")`, `Env(VAR="1")`), never by replacing
text. The words never hold whitespace, so a command joins back to exactly the text it came from.
This module imports nothing from the rest of the sim: the rack builder and the fault tables both
use it.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

# The simulated rack shipped in the package (package data): the rack when no --rack is given.
SHIPPED_RACK = Path(__file__).resolve().parent / "racks" / "sim.toml"

# The runbook's launch command, with the sim's module in place of atom.entrypoints.openai_server.
SIM_LAUNCH = (
    f"{sys.executable} -m rackgate.sim.atom_server --model /models/Kimi-K3"
    " --served-model-name {served_model} --trust-remote-code -tp 1"
    " --data-parallel-size {dp_size} --data-parallel-size-local {dp_local}"
    " --data-parallel-rank {dp_start} --data-parallel-master-ip {head_ip}"
    " --data-parallel-master-port 29500 --data-parallel-base-port 29700"
    " --enable-expert-parallel --enable-dp-attention --kv_cache_dtype fp8"
    " --max-num-seqs 8 --max-num-batched-tokens 2048 --gpu-memory-utilization 0.90"
    " --torch-profiler-dir /tmp/rackgate/profile"
    " --host {head_ip} --server-port {port}"
)
# The runbook's benchmark_serving run, scaled down, with the sim's stand-in (same output format).
SIM_BENCH_RESULT = "/tmp/rackgate/bench/result.json"
SIM_BENCH = (
    f"{sys.executable} -m rackgate.sim.benchmark_serving --backend openai --host {{head_ip}} --port {{port}}"
    " --model /models/Kimi-K3 --tokenizer /models/Kimi-K3 --trust-remote-code"
    " --served-model-name {served_model} --dataset-name random --random-input-len 256 --random-output-len 32"
    " --random-range-ratio 1.0 --max-concurrency 8 --num-prompts 32 --ignore-eos"
    " --percentile-metrics ttft,tpot,itl,e2el --save-result --result-dir /tmp/rackgate/bench"
    " --result-filename result.json"
)


class EditError(ValueError):
    pass


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1


@dataclass(frozen=True)
class Command:
    """A command line: `VAR=value` assignments in front, then its words."""
    env: tuple[tuple[str, str], ...]
    words: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Command:
        words = text.split()
        env = []
        while words and "=" in words[0] and not _is_flag(words[0]):
            k, _, v = words.pop(0).partition("=")
            env.append((k, v))
        return cls(tuple(env), tuple(words))

    def __str__(self) -> str:
        return " ".join([*(f"{k}={v}" for k, v in self.env), *self.words])

    def index(self, flag: str) -> int:
        try:
            return self.words.index(flag)
        except ValueError:
            raise EditError(f"the command has no {flag}: {self}") from None

    def span(self, flag: str) -> tuple[int, int]:
        """Where a flag and its value (if it takes one) sit among the words."""
        i = self.index(flag)
        has_value = i + 1 < len(self.words) and not _is_flag(self.words[i + 1])
        return i, i + 1 + has_value

    def apply(self, edits) -> Command:
        out = self
        for e in edits:
            out = e.on(out)
        return out


@dataclass(frozen=True)
class Drop:
    """Remove a flag and its value."""
    flag: str

    def on(self, c: Command) -> Command:
        i, j = c.span(self.flag)
        return Command(c.env, c.words[:i] + c.words[j:])


@dataclass(frozen=True)
class Set:
    """Give a flag a value (bare when value is None): in place when the command has it, else
    before the flag `before`, else at the end."""
    flag: str
    value: str | None = None
    before: str | None = None

    def on(self, c: Command) -> Command:
        new = (self.flag,) if self.value is None else (self.flag, self.value)
        if self.flag in c.words:
            i, j = c.span(self.flag)
        else:
            i = j = c.index(self.before) if self.before else len(c.words)
        return Command(c.env, c.words[:i] + new + c.words[j:])


@dataclass(frozen=True, init=False)
class Env:
    """Set (or, with None, remove) leading VAR=value assignments."""
    changes: tuple[tuple[str, str | None], ...]

    def __init__(self, **changes: str | None):
        object.__setattr__(self, "changes", tuple(changes.items()))

    def on(self, c: Command) -> Command:
        env = dict(c.env)
        for k, v in self.changes:
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return Command(tuple(env.items()), c.words)
