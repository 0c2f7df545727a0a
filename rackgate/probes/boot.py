"""What SRV-BOOT and SRV-RENDEZVOUS read: the session's boot verdict, as the boot watcher
(rackgate/atom/watch.py `BootVerdict`) decided it, read through the server as launched or attached
(the `atom_server` fixture's object; a "server" check with sees="launched",
rackgate/gates/declare.py). The verdict is copied into `Boot` (this layer sits below the server's
own); nothing is read again."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class Launched(Protocol):
    """The server as launched or attached (rackgate.atom.server.AtomServer)."""
    attached: bool
    boot: Any  # its BootVerdict (None: not watched)

    def log_path(self, node_name: str) -> str: ...


@dataclass(frozen=True)
class Boot:
    """How the boot ended (rackgate.atom.watch.BootVerdict's fields the judges read)."""
    kind: str                  # ready | fatal | stall | died | budget | error
    seconds: float
    node: str = ""
    who: str = ""              # node/dpR, node (pid N), or node
    line: str = ""             # the line that decided it
    lineno: int = 0
    log: str = ""              # the node's log path (where that line is)
    excerpt: str = ""
    hint: str = ""
    signature: str = ""
    detail: str = ""
    why: str = ""              # a fatal line: what made it fatal (its record)
    summary: str = ""          # one line: what stopped the boot, and where
    note: str = ""             # the log format's note ("" when the log was read as ATOM's)
    past_rendezvous: tuple[str, ...] = ()
    exit_code: int | None = None
    ready_line_s: float | None = None
    noted: tuple[str, ...] = ()  # signatures read in records that are not fatal (evidence)
    root_cause: str = ""         # the line the log names as the cause (a kernel library, an engine-start exception)

    @property
    def place(self) -> str:
        """Where it ended: node3/dp9, node2 (pid N), node2."""
        return self.who or self.node


def boot(s: Launched) -> Boot:
    """The boot verdict of the server the suite launched (a server it only attached to has none:
    the declaration's `applies` SKIPs that)."""
    b = s.boot
    return Boot(b.kind, b.seconds, b.node, b.who, b.line, b.lineno, s.log_path(b.node) if b.node else "", b.excerpt,
                b.hint, b.signature, b.detail, b.why, b.summary(), b.format_note, tuple(b.past_rendezvous),
                b.exit_code, b.ready_line_s, tuple(b.noted), b.root_cause)
