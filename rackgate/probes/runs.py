"""The session's runs a "server" probe may read besides the server (the recorded baseline, SRV-GOLDEN's
prompt set, the GSM8K runs), as typed inputs of their own: `Runs`, one callable per run, each made
the first time a probe asks (the `served` fixture builds them, rackgate/fixtures/server.py: the
subject layer above runs them, rackgate/gsm8k/session.py, rackgate/fixtures/quick_gate.py), handed
to a probe beside the server (`WithRuns.runs`) -- never looked up on the server by name. A probe
that reads none takes `rackgate.server_access.ServerAccess` alone.

The shapes here are what a probe reads of each run (the runs' own types live in the layers above).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..server_access import ServerAccess, Spread
from .gsm8k_results import Results
from .target import Recorded


class PromptSet(Protocol):
    """SRV-GOLDEN's versioned prompt set (rackgate.baseline.golden.PromptSet)."""
    @property
    def version(self) -> str: ...
    @property
    def prompts(self) -> Mapping[str, str]: ...   # id -> text, in the file's order


class Decided(Protocol):
    @property
    def verdict(self) -> str | None: ...        # "pass", "fail" (gates/sequential.py Decision)


class QuickRun(Protocol):
    """The quick gate's scored questions as a judge reads them (rackgate.gsm8k.quick.QuickResult)."""
    @property
    def decision(self) -> Decided: ...
    @property
    def items(self) -> Sequence[Any]: ...
    def accuracy(self) -> float: ...
    def summary(self) -> str: ...
    def diagnosis(self) -> str: ...
    def examples(self, limit: int = 3) -> list[str]: ...
    def degenerate_line(self) -> str: ...       # the degenerate share ('' when every answer is language)
    def broken(self) -> str: ...                # the ranks whose every answer is degenerate, node/dpR
    def per_question(self) -> str: ...
    def length_facts(self) -> Mapping[str, object]: ...


class QuickRead(Protocol):
    """The quick gate's run (rackgate.gsm8k.session.QuickRead): every rank asked once first (`pre`),
    then the questions' result, or their hang (`hang`; `scored` before it), or why it could not look."""
    @property
    def pre(self) -> Spread | None: ...
    @property
    def result(self) -> QuickRun | None: ...
    @property
    def hang(self) -> Spread | None: ...
    @property
    def scored(self) -> int: ...
    @property
    def blind(self) -> str: ...


class UnderLoadRead(Protocol):
    """The questions asked under load (rackgate.gsm8k.session.UnderLoadRead)."""
    @property
    def pre(self) -> Spread | None: ...
    @property
    def correct(self) -> int: ...
    @property
    def asked(self) -> int: ...
    @property
    def per_question(self) -> str: ...
    @property
    def hang(self) -> Spread | None: ...
    @property
    def scored(self) -> int: ...
    @property
    def fillers(self) -> str: ...
    @property
    def fillers_answered(self) -> int: ...
    @property
    def blind(self) -> str: ...


class FullRead(Protocol):
    """lm-eval's run as its watch saw it (rackgate.gsm8k.session.FullRead)."""
    @property
    def command(self) -> str: ...
    @property
    def limit(self) -> int: ...
    @property
    def pre(self) -> Spread | None: ...
    @property
    def stalled(self) -> str: ...
    @property
    def look(self) -> Spread | None: ...
    @property
    def late(self) -> str: ...
    @property
    def unanswered(self) -> str: ...
    @property
    def tail(self) -> str: ...
    @property
    def results(self) -> Results | None: ...
    @property
    def blind(self) -> str: ...


@dataclass(frozen=True)
class Runs:
    """The session's runs, each made when a probe first asks (`runs.quick_gate()`)."""
    recorded: Callable[[], Recorded]            # the recorded baseline, or that this run records one
    golden_prompts: Callable[[], PromptSet]     # SRV-GOLDEN's prompt set
    quick_gate: Callable[[], QuickRead]         # ACC-QUICK's run, once per session (ACC-UNDER-LOAD reads it too)
    under_load: Callable[[], UnderLoadRead]     # ACC-UNDER-LOAD's questions under load
    lm_eval: Callable[[], FullRead]             # ACC-GSM8K's lm-eval under its watch


class WithRuns(ServerAccess, Protocol):
    """The server, and the session's runs handed in beside it."""
    @property
    def runs(self) -> Runs: ...
