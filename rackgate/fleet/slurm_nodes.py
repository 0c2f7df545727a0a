"""Slurm nodes as the remediation loop sees them: each node's state and drain reason read back
from `sinfo`, and the two writes it makes (`scontrol update ... state=drain reason=...` and
`state=resume`). A reason that starts with MARK is rackgate's: the loop resumes no other drain."""
from __future__ import annotations

from dataclasses import dataclass

from .slurm import SlurmError, _run

MARK = "rackgate: "
_OUT_OF_SERVICE = ("drain", "down", "fail", "maint", "reboot", "future")


@dataclass(frozen=True)
class NodeState:
    name: str
    state: str      # sinfo's long state, lower case, its flag suffix (`*` not responding, ...) removed
    reason: str     # the drain/down reason ("" without one)

    @property
    def drained(self) -> bool:
        return "drain" in self.state

    @property
    def out_of_service(self) -> bool:
        return any(s in self.state for s in _OUT_OF_SERVICE)

    @property
    def ours(self) -> bool:
        return self.reason.startswith(MARK)


def parse(text: str) -> dict[str, NodeState]:
    """`sinfo -h -N -o '%N|%T|%E'` lines -> {node: state}; a node listed once per partition is one
    entry. SlurmError for a line that is not three fields (nothing parsed is never 'no nodes')."""
    out: dict[str, NodeState] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", 2)
        if len(parts) != 3 or not parts[0].strip() or not parts[1].strip():
            raise SlurmError(f"sinfo: a line not 'node|state|reason': {line[:200]!r}")
        name, state, reason = (p.strip() for p in parts)
        reason = "" if reason in ("none", "(null)") else reason
        out[name] = NodeState(name, state.lower().rstrip("*~#!%$@^-"), reason)
    if not out:
        raise SlurmError("sinfo listed no node")
    return out


class Slurm:
    """The real cluster, through its client tools (SLURM_CONF as the environment sets it)."""

    def states(self) -> dict[str, NodeState]:
        return parse(_run(["sinfo", "-h", "-N", "-o", "%N|%T|%E"]))

    def drain(self, node: str, reason: str) -> None:
        _run(["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"])

    def resume(self, node: str) -> None:
        _run(["scontrol", "update", f"nodename={node}", "state=resume"])


def reason(row: str, place: str, seen: str) -> str:
    """The drain reason: MARK, the row, the place, what was seen (one line, no double quote, at most
    200 characters: what `scontrol show node` and `sinfo` show back)."""
    text = f"{MARK}{row} {place} -- {' '.join(seen.split())}".replace('"', "'")
    return text[:200]
