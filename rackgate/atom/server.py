"""One object owns the ATOM server's whole life: launch on every node, the boot verdict, teardown.

Launch: the rack file's command on every node inside the container, with that node's DP ranks
and the head's data-plane address filled in; ATOM runs one process per node whose rank children
share its stdout, so each node gets one log (with ATOM_LOG_MORE=1, every record names its
process, which names its rank). Boot: the live watcher (rackgate.atom.watch) gives one verdict;
a failed boot is a value the SRV-BOOT check reports, not an exception every test repeats.
Teardown: TERM the process groups we started, a bounded wait, KILL. Attach mode never launches
and never stops anything.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..config.model import Node, Rack
from ..errors import CouldNotObserve
from ..transport import Host, Spawned, TransportError, container_for, fanout
from .client import Client, ServerError
from .logs import NodeLog
from .watch import READY_LINE, BootVerdict, BootWatcher, exit_from_log

# The launch command runs under this wrapper, so that its end is observable in the log itself
# (whatever runs it: a node, a container): the exit code, on a line of its own (watch.EXIT_LINE).
WRAPPER = 'sh -c "$1"; rc=$?; echo "rackgate: the launch command exited with code $rc"; exit $rc'

__all__ = ["READY_LINE", "AtomServer", "BootFailed", "attach", "launch", "launch_command"]


class BootFailed(CouldNotObserve):
    """The server could not be launched at all; str() says where and why."""


# --- what runs where (the rack file alone: no server needed) -----------------------------------
def launch_fields(rack: Rack, node: Node, index: int) -> dict[str, str | int]:
    return {"node": node.name, "node_index": index, "dp_local": rack.gpus_per_node,
            "dp_start": index * rack.gpus_per_node, "dp_size": rack.gpu_count,
            "head_ip": rack.head.data_ip, "data_ip": node.data_ip, "port": rack.launch.port,
            "served_model": rack.server.served_model}


def launch_command(rack: Rack, node: Node, index: int) -> str:
    """The rack file's launch command for `node` (the index-th of the rack's nodes), filled in."""
    try:
        return rack.launch.command.format(**launch_fields(rack, node, index))
    except (KeyError, IndexError, ValueError) as e:
        raise BootFailed(f"launch.command: cannot fill in its placeholders ({e}); known: "
                         f"{', '.join('{' + k + '}' for k in launch_fields(rack, node, index))}") from None


@dataclass
class AtomServer:
    rack: Rack
    client: Client
    launched: dict[str, Spawned] = field(default_factory=dict)  # node -> process we started
    container_hosts: dict[str, Host] = field(default_factory=dict)
    attached: bool = False
    boot: BootVerdict | None = None
    # How requests reach the DP ranks, decided once per run (rackgate.atom.perrank.routing).
    routing: Any = None
    _logs: dict[str, NodeLog] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        return self.client.base_url

    # --- what runs where ------------------------------------------------------------------
    def command_for(self, node: Node, index: int) -> str:
        return launch_command(self.rack, node, index)

    def log_path(self, node_name: str) -> str:
        return self.rack.launch.log_path.format(node=node_name)

    def node_logs(self, hosts: dict[str, Host] | None = None) -> dict[str, NodeLog]:
        """Every node's server log, read inside its container."""
        rack = self.rack
        if hosts:
            for name, host in hosts.items():
                self.container_hosts.setdefault(name, container_for(host, rack.node(name), rack))
        for i, node in enumerate(rack.nodes):
            if node.name in self.container_hosts and node.name not in self._logs:
                g = rack.gpus_per_node
                self._logs[node.name] = NodeLog(node.name, self.container_hosts[node.name],
                                                self.log_path(node.name), range(i * g, (i + 1) * g))
        return dict(self._logs)

    # --- life -----------------------------------------------------------------------------
    def launch(self, hosts: dict[str, Host]) -> None:
        rack = self.rack
        for name, host in hosts.items():
            self.container_hosts[name] = container_for(host, rack.node(name), rack)
        commands = {node.name: self.command_for(node, i) for i, node in enumerate(rack.nodes)}
        env = dict(rack.launch.env)  # as written into the rack (rackgate/config/overrides.py)

        def start(node: Node) -> Spawned:
            ch = self.container_hosts[node.name]
            # a fresh log per launch: the watcher must not read the last run's fatal line
            ch.run(["rm", "-f", ch.path(self.log_path(node.name))], timeout=30)
            # the rack file's launch line is a shell command line, run as one
            return ch.spawn(["sh", "-c", WRAPPER, "rackgate-launch", commands[node.name]],
                            self.log_path(node.name), env)

        for node, res in zip(rack.nodes, fanout(list(rack.nodes), start)):
            if isinstance(res, Exception):
                self.stop()
                raise BootFailed(f"could not launch on {node.name}: {res}")
            self.launched[node.name] = res

    def gone(self) -> str | None:
        """A launched server's process that exited (None: all alive, attached, or not known): which
        node, and its exit status read (rackgate/atom/outcome.py), e.g. 137: the OOM killer."""
        from . import outcome
        for name, proc in self.launched.items():
            try:
                if proc.alive():
                    continue
            except CouldNotObserve:
                continue
            code = exit_from_log(self.node_logs()[name])
            return f"the launch command on {name} {outcome.explain(code, name)}"
        return None

    def watch_boot(self) -> BootVerdict:
        watcher = BootWatcher(self.node_logs(), self.rack.head.name, self.launched, self.api_ready, self.rack.launch)
        try:
            self.boot = watcher.run()
        except TransportError as e:
            self.boot = BootVerdict("error", 0.0, detail=f"could not follow the logs: {e}", decided_at=time.time())
        # Which pid is which rank, while every rank that booted is alive: a rank that dies later
        # is still named by the lines it wrote.
        fanout(list(self.node_logs().values()), lambda log: log.pids())
        return self.boot

    def api_ready(self) -> bool:
        """Ready by the API's evidence: /v1/models lists a model (the served name when it is there;
        whether it is the right name is SRV-MODELS' judgment) and one 1-token completion for it
        returns HTTP 200."""
        try:
            ids = self.client.model_ids()
            if not ids:
                return False
            model = self.client.model if self.client.model in ids else ids[0]
            body = {"model": model, "prompt": "Hello", "max_tokens": 1, "temperature": 0.0}
            return self.client.request("POST", "/v1/completions", body).status == 200
        except ServerError:
            return False

    def stop(self) -> None:
        if self.attached:
            return
        grace = self.rack.launch.stop_grace_s
        fanout(list(self.launched.values()), lambda p: p.stop(grace_s=grace))
        self.launched.clear()


def _client(rack: Rack, url: str, model: str) -> Client:
    key = rack.server.api_key.get_secret_value() if rack.server.api_key else None
    return Client(url, model, rack.serving.request_timeout_s, key)


def attach(rack: Rack, hosts: dict[str, Host] | None = None) -> AtomServer:
    """A server someone else launched (at rack.server.attach_url): never launched, never stopped
    by the suite. Its logs are read where the rack file says they are, when they exist."""
    srv = AtomServer(rack, _client(rack, rack.server.attach_url, rack.server.served_model), attached=True)
    if hosts:
        srv.node_logs(hosts)
    return srv


def launch(rack: Rack, hosts: dict[str, Host]) -> AtomServer:
    """Launch on every node and watch the boot; the verdict is in .boot (never raises on a
    failed boot; raises BootFailed when nothing could be launched)."""
    if not rack.launch.command:
        raise BootFailed("the rack file has no launch.command: give one, or attach with --atom-url URL "
                         "--served-model NAME")
    srv = AtomServer(rack, _client(rack, f"http://{rack.head.data_ip}:{rack.launch.port}", rack.server.served_model))
    try:
        srv.launch(hosts)
        srv.watch_boot()
    except BaseException:
        srv.stop()
        raise
    return srv
