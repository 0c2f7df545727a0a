"""ACC-FAKE-EPLB: an accuracy run on a server launched with --fake-eplb is void.

--fake-eplb replaces the MoE router's logits with a uniform distribution (ATOM arg_utils.py: "for
benchmarking the balanced-load upper bound only"; config.py: "such a run's output is garbage
anyway"). It belongs to the throughput recipe (the runbook's Config B), and a rack relaunched
from that recipe keeps it. Two witnesses, both pure here:
- the launch command: --fake-eplb among its flags (ATOM accepts it bare);
- the running server's `Engine kwargs: {...}` line: 'fake_eplb': True.
"""
from __future__ import annotations

from .lint import flags

FLAG = "fake-eplb"
KWARG = "fake_eplb"


def command_has_flag(command: str) -> bool:
    return FLAG in flags(command)


def judge(command: str | None, engine_kwargs: dict[str, dict[str, object]]) -> list[str]:
    """Findings (empty: not void). command: the launch command the server runs (None when not
    known); engine_kwargs: node -> the dict of its last `Engine kwargs:` line."""
    out = []
    if command and command_has_flag(command):
        out.append("the launch command has --fake-eplb")
    for node, kw in sorted(engine_kwargs.items()):
        if kw.get(KWARG) is True:
            out.append(f"{node}: Engine kwargs has 'fake_eplb': True")
    return out
