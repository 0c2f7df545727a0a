"""What SRV-LAUNCH-LINT reads: the launch command and environment, before anything is launched
(a "server" check with sees="planned", rackgate/gates/declare.py): the rack file's command for the
head node and its launch environment, or -- attached with --atom-url and a rack file naming the
nodes -- the command line and environment of the process serving the port on the head node
(rackgate/probes/procs.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlparse

from ..access import NodeAccess
from ..config.model import Rack
from ..errors import CouldNotObserve
from . import procs

NOT_LAUNCHED = "the suite did not launch this server"


class Planned(Protocol):
    """The server as the rack file plans it, nothing launched (rackgate.atom.planned.Planned)."""
    rack: Rack

    @property
    def attached(self) -> bool: ...
    def command(self) -> str: ...          # the rack file's launch command for the head, filled in
    def head(self) -> NodeAccess: ...      # the head node (attached: where its command line is read)


@dataclass(frozen=True)
class Launch:
    command: str
    env: dict[str, str]
    where: str  # node1, or node1 pid 4242 (attached)


def launch(p: Planned) -> Launch:
    """The launch the server runs with: the rack file's (launch mode), or the running process's
    on the head (attached); could not observe when the head or ps cannot be read, or no process on
    the head serves the port."""
    rack = p.rack
    if not p.attached:
        return Launch(p.command(), dict(rack.launch.env), rack.head.name)
    port = urlparse(rack.server.attach_url).port or 80
    head = p.head()
    found = procs.serving(head, port)
    if found is None:
        raise CouldNotObserve(f"{NOT_LAUNCHED}, and no process on {rack.head.name} serves port {port} with "
                              "--model (ps -ww -eo pid=,args=): its command line could not be read; set [launch] "
                              "head to the node that runs it")
    pid, args = found
    return Launch(args, procs.environ(head, int(pid)), f"{rack.head.name} pid {pid}")  # ps's pid: digits
