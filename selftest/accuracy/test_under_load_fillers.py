"""ACC-UNDER-LOAD's fillers are the rack file's: accuracy.under_load_filler_words is each filler's
prompt length (default 600 words; the real-engine self-tests' rack asks 100), the filler streams
accuracy.under_load_per_rank per DP rank. The read is driven with its requests stubbed (a unit
test: no server): what is handed to the fillers is what is checked."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate import config
from rackgate.gsm8k import quick, session, setup, under_load
from rackgate.probes import load
from rackgate.sim.rack import SHIPPED_RACK, override

pytestmark = pytest.mark.unit


def _fillers_of(monkeypatch, rack) -> list[str]:
    """The prompts run_under_load hands its filler streams."""
    prompts: list[str] = []

    class Fillers:
        def __init__(self, clients, n, prompt_of, *args, **kw):
            prompts.extend(prompt_of(i) for i in range(n))
            self.answered = n

        def stop(self, wait: bool = True) -> None:
            pass

        def describe(self) -> str:
            return "stub"

    monkeypatch.setattr(setup, "task_for", lambda cfg: list(range(10)))  # only its length is read here
    monkeypatch.setattr(session, "_preflight", lambda per_rank: SimpleNamespace(hang=lambda: None,
                                                                                nothing_back=lambda: False))
    monkeypatch.setattr(under_load, "Fillers", Fillers)
    monkeypatch.setattr(quick, "ask", lambda *a, **kw: [])
    server = SimpleNamespace(per_rank=SimpleNamespace(rank_of=lambda i: None, hang=None), url="http://127.0.0.1:9",
                             client=SimpleNamespace(model="m"))
    session.run_under_load(rack, server)
    return prompts


def test_the_filler_prompts_are_the_rack_files_length(monkeypatch):
    rack = config.load(SHIPPED_RACK)
    default = _fillers_of(monkeypatch, rack)
    short = _fillers_of(monkeypatch, override(rack, "accuracy.under_load_filler_words", 100))
    assert default and len(short) == len(default)  # as many streams: under_load_per_rank per rank
    assert default == [load.prompt(600, i) for i in range(len(default))]  # 600 words, then the ask
    assert short == [load.prompt(100, i) for i in range(len(short))]
