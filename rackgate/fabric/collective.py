"""Run the shipped collective probe inside the container of one node, or of every node at once.

The probe's source goes to `python3 -` on stdin: nothing is copied onto the node. Its
environment is the rack file's fabric.collective_env (NCCL_DEBUG=INFO and the launch's
communication settings), passed with `docker exec -e`.
"""
from __future__ import annotations

from ..probes import collective
from ..transport import Host, Result, container_for, fanout


def _bound(cfg, worlds: int) -> float:
    # every world is bounded by the probe itself; this only covers python + torch start-up on top
    return worlds * (cfg.collective_timeout_s + cfg.collective_grace_s) + 120


def _common(cfg) -> str:
    return (f"--backend {cfg.collective_backend} --timeout {cfg.collective_timeout_s:g} "
            f"--grace {cfg.collective_grace_s:g}")


def per_node_command(cfg) -> str:
    sizes = ",".join(str(w) for w in cfg.collective_world_sizes)
    return f"{cfg.container_python} - --world-sizes {sizes} --port {cfg.collective_port} {_common(cfg)}"


def across_command(cfg, nnodes: int, node_rank: int, ranks: int, master: str) -> str:
    return (f"{cfg.container_python} - --nnodes {nnodes} --node-rank {node_rank} --ranks-per-node {ranks} "
            f"--master-addr {master} --port {cfg.collective_port + 100} --join-timeout {cfg.collective_join_s:g} "
            f"{_common(cfg)}")


def _container(host: Host, rack, name: str) -> Host:
    return container_for(host, rack.node(name), rack, dict(rack.fabric.collective_env))


def run_node(host: Host, rack, name: str) -> tuple[Result, collective.ProbeOutput]:
    cfg = rack.fabric
    res = _container(host, rack, name).run(per_node_command(cfg), timeout=_bound(cfg, len(cfg.collective_world_sizes)),
                                           stdin=collective.PROBE_PATH.read_text())
    return res, collective.parse(res.stdout + "\n" + res.stderr)


def run_across(hosts: dict[str, Host], rack) -> dict[str, tuple[Result, collective.ProbeOutput] | Exception]:
    cfg = rack.fabric
    names = [n.name for n in rack.nodes]
    ranks = cfg.collective_ranks_per_node or rack.gpus_per_node
    master = rack.head.data_ip
    src = collective.PROBE_PATH.read_text()

    def one(i_name):
        i, name = i_name
        res = _container(hosts[name], rack, name).run(across_command(cfg, len(names), i, ranks, master),
                                                      timeout=_bound(cfg, 1) + cfg.collective_join_s, stdin=src)
        return res, collective.parse(res.stdout + "\n" + res.stderr)

    return dict(zip(names, fanout(list(enumerate(names)), one)))
