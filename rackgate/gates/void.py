"""ACC-FAKE-EPLB: an accuracy run on a server launched with --fake-eplb is void.

--fake-eplb replaces the MoE router's logits with a uniform distribution (ATOM arg_utils.py: "for
benchmarking the balanced-load upper bound only"; config.py: "such a run's output is garbage
anyway"). It belongs to the throughput recipe (the runbook's Config B), and a rack relaunched
from that recipe keeps it. Two witnesses, both pure here:
- the launch command: --fake-eplb among its flags (ATOM accepts it bare);
- the running server's `Engine kwargs: {...}` line: 'fake_eplb': True.
"""
from __future__ import annotations

from ..config.model import Rack
from ..probes import acc
from .declare import Check, Shown, declare
from .lint import flags

FLAG = "fake-eplb"
KWARG = "fake_eplb"


def command_has_flag(command: str) -> bool:
    return FLAG in flags(command)


def judge(command: str | None, engine_kwargs: dict[str, dict[object, object]]) -> list[str]:
    """Findings (empty: not void). command: the launch command the server runs (None when not
    known); engine_kwargs: node -> the dict of its last `Engine kwargs:` line."""
    out = []
    if command and command_has_flag(command):
        out.append("the launch command has --fake-eplb")
    for node, kw in sorted(engine_kwargs.items()):
        if kw.get(KWARG) is True:
            out.append(f"{node}: Engine kwargs has 'fake_eplb': True")
    return out


def launched_void(launch: acc.Launch, rack: Rack, where: str) -> list[str]:
    """The server under the accuracy rows was not launched with --fake-eplb (the launch command, or
    any node's `Engine kwargs:`); said with the witness read."""
    found = judge(launch.command, launch.kwargs)
    if found and not launch.kwargs:
        found[-1] += " (the rack file's launch command: the server's log was not readable)"
    return found


def launched_shown(launch: acc.Launch, rack: Rack) -> list[Shown]:
    return ([Shown(f"Engine kwargs ({node})", line) for node, line in sorted(launch.lines.items())]
            + ([Shown("launch command (rack file)", launch.command)] if launch.command else []))


def no_launch_to_read(rack: Rack) -> str:
    """Attached without a rack file: no launch command and no nodes whose log could say it."""
    if rack.server.attach_url and not rack.nodes and not rack.launch.command:
        return ("the suite did not launch this server (--atom-url without a rack file): no launch command and no "
                "nodes to read its log from; pass --rack FILE naming its nodes to check its launch flags")
    return ""


declare(Check("ACC-FAKE-EPLB", "server", probe=acc.launch, judge=launched_void, shows=launched_shown,
              applies=no_launch_to_read))
