"""One object owns the ATOM server's whole life: launch on every node, readiness, teardown.

Launch: the rack file's command on every node inside the container, with that node's DP rank
and the head's data-plane address filled in, output to one log per node. Readiness: the head's
ready line and /v1/models answering; the wait ends the moment a launched process dies and gives
up at a monotonic deadline. Teardown: TERM the process groups we started, a bounded wait, KILL.
Attach mode never launches and never stops anything.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..transport import Host, Spawned, TransportError, container_for, fanout
from .client import Client, ServerError

READY_LINE = "Server started successfully and ready to accept requests"


class BootFailed(Exception):
    """The server did not come up; str() says which node and why, with the log's last lines."""


@dataclass
class AtomServer:
    rack: object
    client: Client
    launched: dict[str, Spawned] = field(default_factory=dict)  # node -> process we started
    container_hosts: dict[str, Host] = field(default_factory=dict)
    attached: bool = False

    @property
    def url(self) -> str:
        return self.client.base_url

    # --- launch ---------------------------------------------------------------------------
    def command_for(self, node, index: int) -> str:
        rack = self.rack
        fields = {"node": node.name, "node_index": index, "dp_local": rack.gpus_per_node,
                  "dp_start": index * rack.gpus_per_node, "dp_size": rack.gpu_count,
                  "head_ip": rack.head.data_ip, "data_ip": node.data_ip, "port": rack.launch.port,
                  "served_model": rack.server.served_model}
        return rack.launch.command.format(**fields)

    def log_path(self, node_name: str) -> str:
        return self.rack.launch.log_path.format(node=node_name)

    def launch(self, hosts: dict[str, Host]) -> None:
        rack = self.rack
        for name, host in hosts.items():
            self.container_hosts[name] = container_for(host, rack.node(name), rack)

        def start(i_node):
            i, node = i_node
            ch = self.container_hosts[node.name]
            return ch.spawn(self.command_for(node, i), self.log_path(node.name), rack.launch.env)

        items = list(enumerate(rack.nodes))
        for (i, node), res in zip(items, fanout(items, start)):
            if isinstance(res, Exception):
                self.stop()
                raise BootFailed(f"could not launch on {node.name}: {res}")
            self.launched[node.name] = res

    def log_tail(self, node_name: str, lines: int = 20) -> str:
        ch = self.container_hosts[node_name]
        res = ch.run(f"tail -n {lines} {ch.qpath(self.log_path(node_name))} 2>/dev/null", timeout=15)
        return res.stdout

    def wait_ready(self, budget_s: float, poll_s: float = 0.5) -> float:
        """Bounded wait for readiness; returns the seconds it took."""
        t0 = time.monotonic()
        deadline = t0 + budget_s
        head = self.rack.head.name
        while time.monotonic() < deadline:
            for name, proc in self.launched.items():
                if not proc.alive():
                    raise BootFailed(f"the server process on {name} (pid {proc.pid}) died while booting; "
                                     f"last log lines:\n{self.log_tail(name)}")
            if head not in self.launched or READY_LINE in self.log_tail(head, 200):
                try:
                    self.client.model_ids()
                    return time.monotonic() - t0
                except ServerError:
                    pass
            time.sleep(poll_s)
        raise BootFailed(f"not ready within the boot budget ({budget_s:g}s, launch.boot_budget_s); "
                         f"last log lines on {head}:\n{self.log_tail(head)}")

    def stop(self) -> None:
        if self.attached:
            return
        grace = self.rack.launch.stop_grace_s
        fanout(list(self.launched.values()), lambda p: p.stop(grace_s=grace))
        self.launched.clear()


def attach(rack, url: str, served_model: str) -> AtomServer:
    key = rack.server.api_key.get_secret_value() if rack.server.api_key else None
    return AtomServer(rack, Client(url, served_model, rack.serving.request_timeout_s, key), attached=True)


def launch(rack, hosts: dict[str, Host]) -> AtomServer:
    if not rack.launch.command:
        raise BootFailed("the rack file has no launch.command: give one, or attach with --atom-url URL "
                         "--served-model NAME")
    key = rack.server.api_key.get_secret_value() if rack.server.api_key else None
    url = f"http://{rack.head.data_ip}:{rack.launch.port}"
    srv = AtomServer(rack, Client(url, rack.server.served_model, rack.serving.request_timeout_s, key))
    try:
        srv.launch(hosts)
        srv.wait_ready(rack.launch.boot_budget_s)
    except (BootFailed, TransportError):
        srv.stop()
        raise
    return srv
