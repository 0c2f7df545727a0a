"""Run the shipped collective probe inside every node's container at once: each node's own
worlds (1, 2, 4), then all nodes' ranks together. One probe process per node imports torch once
for both parts.

The probe's source goes to `python3 -` on stdin: nothing is copied onto the node. Its
environment is the rack file's fabric.collective_env (NCCL_DEBUG=INFO and the launch's
communication settings), passed with `docker exec -e`. A node's own worlds rendezvous on its
data-plane address (its own), the run across nodes on the head node's. In each of a node's own
worlds of 2+ ranks the probe also times an all_reduce of fabric.collective_bw_bytes (the bus
bandwidth, rackgate.probes.collective.Bandwidth).
"""
from __future__ import annotations

from ..config.model import Node, Rack
from ..probes import collective
from ..transport import Host, Result, TransportError, container_for, fanout


def command(rack: Rack, node_rank: int, data_ip: str, across_nodes: bool = True) -> list[str]:
    """argv of the probe (its source arrives on stdin) on one node; without `across_nodes`, its own
    worlds only."""
    cfg = rack.fabric
    sizes = ",".join(str(w) for w in cfg.collective_world_sizes)
    ranks = cfg.collective_ranks_per_node or rack.gpus_per_node
    across = [collective.ACROSS_FLAG, str(len(rack.nodes)), "--node-rank", str(node_rank), "--ranks-per-node", str(ranks),
              "--master-addr", rack.head.data_ip] if len(rack.nodes) > 1 and across_nodes else []
    # each node's own worlds on ports of their own: a TCPStore listens on every address, so nodes
    # that share a host (the sim) would collide on one port
    return [cfg.container_python, "-", "--world-sizes", sizes, "--local-addr", data_ip,
            "--port", str(cfg.collective_port + 10 * node_rank), "--across-port", str(cfg.collective_port - 1),
            *across, "--join-timeout", f"{cfg.collective_join_s:g}", "--backend", cfg.collective_backend,
            "--timeout", f"{cfg.collective_timeout_s:g}", "--grace", f"{cfg.collective_grace_s:g}",
            "--bw-bytes", str(cfg.collective_bw_bytes), "--bw-warmup", str(cfg.collective_bw_warmup),
            "--bw-iters", str(cfg.collective_bw_iters)]


def bound(rack: Rack) -> float:
    """The probe bounds every world itself (rendezvous, then the collective); this covers python +
    torch start-up on top of that."""
    cfg = rack.fabric
    worlds = len(cfg.collective_world_sizes) + (len(rack.nodes) > 1)
    return worlds * (cfg.collective_join_s + cfg.collective_timeout_s + cfg.collective_grace_s) + 180


def run_all(hosts: dict[str, Host], rack: Rack) -> dict[str, tuple[Result, collective.ProbeOutput] | Exception]:
    """Every node's probe at once. The run across nodes needs every node's ranks: with a node the
    suite could not reach, the others run their own worlds only, instead of each rank waiting
    fabric.collective_join_s for ranks that never come (the judge says which node it lacked)."""
    src = collective.PROBE_PATH.read_text()
    every_node = all(n.name in hosts for n in rack.nodes)

    def one(i_node: tuple[int, Node]) -> tuple[Result, collective.ProbeOutput]:
        i, node = i_node
        if node.name not in hosts:  # unreachable: its items ERROR with the reason the node gave
            raise getattr(hosts, "missing", {}).get(node.name) or TransportError(node.name, "not reachable")
        box = container_for(hosts[node.name], node, rack, dict(rack.fabric.collective_env))
        res = box.run(command(rack, i, node.data_ip, every_node), timeout=bound(rack), stdin=src)
        return res, collective.parse(res.stdout, res.stderr)

    return dict(zip([n.name for n in rack.nodes], fanout(list(enumerate(rack.nodes)), one)))
