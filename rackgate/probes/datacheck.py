"""The data-check probe's output -> facts (FAB-DATACHECK). The probe itself is datacheck_probe.py
next to this module (shipped, run with the container's python on every node at once).

Every rank prints its own verdict, `RGDATA {json}` (one line, one write); the probe's parent
prints one for a rank it had to end (`status: killed`), and `RGDATA-START ... torch=<version>`
once per node. A pass is every node's output of one run over a set of members (the whole rack,
or a subset while bisecting); members are named `node2/gpu1`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..lines import ended_lines
from .target import On

PROBE_PATH = Path(__file__).with_name("datacheck_probe.py")
STATUSES = ("ok", "wrong", "absent", "timeout", "error", "killed")
_START = re.compile(r"^RGDATA-START pid=\d+ torch=(.*?) node=(\d+) ")


@dataclass(frozen=True)
class Wrong:
    """Wrong elements one rank received: from `src` (a member; 'sum' for all_reduce and
    reduce_scatter, whose result mixes every source), in `op` at `size` bytes."""
    op: str
    size: int
    src: str
    dst: str
    count: int
    first_offset: int
    last_offset: int
    first_iter: int
    iters: int

    def describe(self) -> str:
        frm = "the sum of every rank" if self.src == "sum" else self.src
        return (f"{self.op} {self.size} B: {self.count} wrong elements {frm} -> {self.dst} at offsets "
                f"{self.first_offset}..{self.last_offset}, first in iteration {self.first_iter} ({self.iters} iterations)")


@dataclass(frozen=True)
class Verdict:
    """One rank's own verdict."""
    rank: int
    member: str
    status: str
    wrong: tuple[Wrong, ...] = ()
    missing: tuple[str, ...] = ()  # members this rank waited for at the rendezvous in vain
    at: str = ""  # the collective it was in when it failed or was ended
    error: str = ""
    iters_done: int | None = None
    others_at: dict[str, str] = field(default_factory=dict)  # member -> where it was, when this rank failed

    def describe(self) -> str:
        if self.status == "ok":
            return f"{self.member}: every element right ({self.iters_done} iterations)"
        if self.status == "wrong":
            return f"{self.member}: " + "; ".join(w.describe() for w in self.wrong)
        if self.status == "absent":
            return f"{self.member}: waited in vain for {', '.join(self.missing)} ({self.error})"
        return f"{self.member}: {self.status} in {self.at or 'the rendezvous'}: {self.error}"[:400]


@dataclass
class NodeOutput:
    """One node's probe in one pass."""
    node: str
    started: bool = False
    torch: str = ""
    rc: int | None = None
    shown: str = ""  # the command, where it ran, what it printed
    error: str = ""  # it could not be run there (the transport's words)


@dataclass
class Pass:
    """One run of the data check over `members` (rank order)."""
    label: str
    members: list[str]
    verdicts: dict[int, Verdict] = field(default_factory=dict)
    nodes: dict[str, NodeOutput] = field(default_factory=dict)
    unparsed: list[str] = field(default_factory=list)  # RGDATA lines the parser did not recognise

    @property
    def ok(self) -> bool:
        return len(self.verdicts) == len(self.members) and all(v.status == "ok" for v in self.verdicts.values())

    def unrun(self) -> list[str]:
        """Nodes whose probe did not start (could not run there, or no torch): nothing to judge."""
        return sorted(n for n, o in self.nodes.items() if o.error or not o.started or o.torch.startswith("missing"))

    def silent(self) -> list[str]:
        """Members that printed no verdict at all."""
        return [m for r, m in enumerate(self.members) if r not in self.verdicts]

    def absent(self) -> list[str]:
        """Members some rank waited for in vain at the rendezvous."""
        return sorted({m for v in self.verdicts.values() for m in v.missing})

    def stuck(self) -> list[str]:
        """Members whose collective failed, timed out or was ended (no data verdict)."""
        return [v.member for v in self.verdicts.values() if v.status in ("timeout", "error", "killed")]

    def wrong(self) -> list[Wrong]:
        return [w for v in self.verdicts.values() for w in v.wrong]

    def _some(self, ms: list[str]) -> str:
        if len(ms) == len(self.members) and len(ms) > 2:
            return f"all {len(ms)} ranks"
        ms = sorted(ms, key=self.members.index) if all(m in self.members for m in ms) else sorted(ms)
        return ", ".join(ms[:6]) + (f" and {len(ms) - 6} more" if len(ms) > 6 else "")

    def summary(self) -> str:
        if self.unrun():
            return "could not run on " + ", ".join(self.unrun())
        if self.ok:
            return "passed"
        parts = []
        if self.wrong():
            parts.append(f"wrong data on {self._some(sorted({w.dst for w in self.wrong()}))}")
        if self.absent():
            parts.append(f"never arrived: {self._some(self.absent())}")
        if self.stuck():
            parts.append(f"hung or failed on {self._some(self.stuck())}")
        if self.silent():
            parts.append(f"no verdict from {self._some(self.silent())}")
        return "; ".join(parts) or "failed"

    def describe(self) -> str:
        return f"{self.label} [{len(self.members)} ranks: {', '.join(self.members)}]: {self.summary()}"

    def brief(self) -> str:
        """label [members by node: node1/gpu{0,1}, node3/gpu{0,1,2,3}]: summary."""
        by: dict[str, list[str]] = {}
        for m in self.members:
            node, _, gpu = m.partition("/gpu")
            by.setdefault(node, []).append(gpu)
        return (f"{self.label} [{', '.join(f'{n}/gpu{{{chr(44).join(g)}}}' for n, g in by.items())}]: "
                f"{self.summary()}")


def _verdict(d: dict[str, Any], members: list[str]) -> Verdict:
    rank = int(d["rank"])
    status = str(d["status"])
    if status not in STATUSES or not 0 <= rank < len(members):
        raise ValueError(f"status {status!r} rank {rank}")

    def name(r: object) -> str:
        return members[int(r)] if str(r).lstrip("-").isdigit() and 0 <= int(r) < len(members) else str(r)  # type: ignore[call-overload]
    wrong = tuple(Wrong(str(w["op"]), int(w["bytes"]), "sum" if int(w["src"]) < 0 else name(w["src"]), members[rank],
                        int(w["count"]), int(w["first_offset"]), int(w["last_offset"]), int(w["first_iter"]),
                        int(w["iters"])) for w in d.get("wrong", []))
    return Verdict(rank, members[rank], status, wrong, tuple(name(r) for r in d.get("missing", [])),
                   str(d.get("at", "")), str(d.get("error", "")), d.get("iters_done"),
                   {name(r): str(a) for r, a in (d.get("others_at") or {}).items()})


def parse(p: Pass, node: str, *texts: str) -> None:
    """One node's probe output (stdout, stderr: each read to its last ended line) into the pass."""
    out = p.nodes.setdefault(node, NodeOutput(node))
    for line in (ln.strip() for text in texts for ln in ended_lines(text)):
        m = _START.match(line)
        if m:
            out.started, out.torch = True, m.group(1)
            continue
        if not line.startswith("RGDATA {"):
            continue
        try:
            v = _verdict(json.loads(line[len("RGDATA "):]), p.members)
        except (ValueError, KeyError, TypeError, IndexError) as e:
            p.unparsed.append(f"{node}: {line[:200]} ({e})")
            continue
        p.verdicts.setdefault(v.rank, v)  # the rank's own verdict first; a later one (killed) does not replace it


@dataclass
class Bisection:
    """What the bisection concluded (its runs: Outcome.runs)."""
    culprit: list[str] = field(default_factory=list)  # the smallest set that still fails
    kind: str = ""  # gpu / link / set / whole / inconclusive (a run could not run) / capped
    note: str = ""


@dataclass
class Outcome:
    """The session's data check: the whole-rack pass, and the bisection when it ran."""
    whole: Pass
    bisection: Bisection | None = None
    runs: list[Pass] = field(default_factory=list)  # every bisection run, in order


def outcome(on: On) -> Outcome:
    """FAB-DATACHECK: the session's data check (one run for the rack: the first item to ask starts
    it, rackgate/fabric/datacheck.py run_all)."""
    return on.datacheck()
