"""The server as the rack file plans it, before anything is launched: what SRV-LAUNCH-LINT reads
(rackgate/probes/launch.py; the `planned` fixture, rackgate/fixtures/server.py). The head's
launch command filled in as the launch will fill it, and -- attached -- the head node, where the
running server's own command line is read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..access import NodeAccess
from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes.launch import NOT_LAUNCHED
from .server import launch_command


@dataclass(frozen=True)
class Planned:
    rack: Rack
    hosts: Callable[[], Any]  # the reachable nodes ({name: Host}, `.missing`: why not), asked only when attached

    @property
    def attached(self) -> bool:
        return bool(self.rack.server.attach_url)

    @property
    def url(self) -> str:
        """The server's, as it will be launched (rackgate.atom.server.launch) or attached."""
        rack = self.rack
        return rack.server.attach_url or f"http://{rack.head.data_ip}:{rack.launch.port}"

    def command(self) -> str:
        """The rack file's launch command for the head node, filled in."""
        rack = self.rack
        return launch_command(rack, rack.head, [n.name for n in rack.nodes].index(rack.head.name))

    def head(self) -> NodeAccess:
        """The head node; could not observe when it does not answer."""
        hosts, name = self.hosts(), self.rack.head.name
        if name not in hosts:
            raise CouldNotObserve(f"{NOT_LAUNCHED}, and its command line could not be read: "
                                  f"{hosts.missing.get(name, name + ' is not reachable')}")
        head: NodeAccess = hosts[name]
        return head
