"""FAB-DATACHECK's runs: the shipped data-check probe (rackgate/probes/datacheck_probe.py) in every
node's container at once, over the whole rack's GPUs; when that pass fails without naming its
culprit (a hang, or ranks that failed without wrong data), the bisection re-runs it on subsets.

The probe goes to the container's python on stdin (nothing copied onto the node), with
fabric.collective_env + fabric.datacheck_env as `docker exec -e`. A pass over a set of members
(node/gpu) starts one probe on every node holding a member; rank 0's node hosts the rendezvous
on its data-plane address; each pass gets a port of its own (a store that was killed may leave
its port in TIME_WAIT).

Bisection (members in rack order, so halves are node halves first, then GPU halves):
 1. halves: run each half of the failing set; the first that fails becomes the set; repeat down
    to a pair;
 2. both halves pass (the fault needs members of both): narrow one half while the other stays
    whole (a quarter with the other half; the next quarter is taken as the culprit's side
    without a run when the first passes), then the other half against what remains;
 3. a pair that fails: each of its members with a third member, so a GPU that fails with anyone
    is told from a link that fails only between these two.
A set that cannot be narrowed (every part passes, the whole fails) is said as such: the fault
needs the whole rack. Every run is kept (the evidence lists them); the count is bounded by
fabric.datacheck_bisect_runs.
"""
from __future__ import annotations

from typing import Callable

from ..config.model import Rack
from ..probes import datacheck
from ..probes.datacheck import Bisection, Outcome, Pass
from ..transport import Host, TransportError, container_for, fanout


def sizes(rack: Rack) -> list[int]:
    """The message sizes of a pass: fabric.datacheck_min_bytes, x datacheck_size_step, up to and
    including datacheck_max_bytes."""
    cfg = rack.fabric
    out, s = [], cfg.datacheck_min_bytes
    while s < cfg.datacheck_max_bytes:
        out.append(s)
        s *= cfg.datacheck_size_step
    return [*out, cfg.datacheck_max_bytes]


def members(rack: Rack, hosts: dict[str, Host]) -> list[str]:
    """The whole rack's members (node/gpuN), rack order, of the nodes the suite reached."""
    per = rack.fabric.datacheck_ranks_per_node or rack.gpus_per_node
    return [f"{n.name}/gpu{g}" for n in rack.nodes if n.name in hosts for g in range(per)]


def command(rack: Rack, world: list[str], node_index: int, master: str, port: int, label: str) -> list[str]:
    cfg = rack.fabric
    index = {n.name: i for i, n in enumerate(rack.nodes)}
    spec = ",".join(f"{index[m.split('/')[0]]}:{m.split('/gpu')[1]}" for m in world)
    return [cfg.container_python, "-", "--members", spec, "--node", str(node_index), "--master-addr", master,
            "--port", str(port), "--backend", cfg.collective_backend, "--sizes", ",".join(map(str, sizes(rack))),
            "--iters", str(cfg.datacheck_iters), "--ops", ",".join(cfg.datacheck_ops),
            "--join-timeout", f"{cfg.datacheck_join_s:g}", "--op-timeout", f"{cfg.datacheck_op_timeout_s:g}",
            "--grace", f"{cfg.datacheck_grace_s:g}", "--budget", f"{cfg.datacheck_budget_s:g}", "--run", label]


def bound(rack: Rack) -> float:
    """The probe ends every rank itself; this covers python + torch start-up on top of that."""
    cfg = rack.fabric
    return cfg.datacheck_join_s + cfg.datacheck_budget_s + 2 * cfg.datacheck_op_timeout_s + cfg.datacheck_grace_s + 180


def run_pass(hosts: dict[str, Host], rack: Rack, world: list[str], label: str, port: int) -> Pass:
    """One pass over `world` (members in rank order): every node holding a member at once."""
    src = datacheck.PROBE_PATH.read_text()
    env = {**rack.fabric.collective_env, **rack.fabric.datacheck_env}
    by_name = {n.name: (i, n) for i, n in enumerate(rack.nodes)}
    nodes = list(dict.fromkeys(m.split("/")[0] for m in world))
    master = by_name[nodes[0]][1].data_ip
    p = Pass(label, list(world))

    def one(name: str) -> None:
        i, node = by_name[name]
        out = p.nodes.setdefault(name, datacheck.NodeOutput(name))
        try:
            box = container_for(hosts[name], node, rack, dict(env))
            res = box.run(command(rack, world, i, master, port, label), timeout=bound(rack), stdin=src)
        except (TransportError, OSError) as e:
            out.error = f"{name}: {e}"
            return
        out.rc, out.shown = res.rc, res.evidence()
        datacheck.parse(p, name, res.stdout, res.stderr)
        if not out.started:
            out.error = f"{name}: the data-check probe did not start (rc={res.rc}): {res.came_back()}"

    for name, got in zip(nodes, fanout(nodes, one)):
        if isinstance(got, Exception):  # a command that outlived its bound, a bug of ours: said where
            p.nodes.setdefault(name, datacheck.NodeOutput(name)).error = f"{name}: {type(got).__name__}: {got}"
    return p


def bisect(whole: list[str], fails: Callable[[list[list[str]]], list[bool | None]], cap: int) -> Bisection:
    """Narrow the failing `whole` (members in rack order). `fails(worlds)`: runs disjoint worlds at
    once; for each True / False, None when it could not run (the bisection stops there,
    inconclusive). At most `cap` runs; a world already run is never run again."""
    b = Bisection()
    seen: dict[tuple[str, ...], bool] = {}

    def run(*worlds: list[str]) -> list[bool]:
        new = [w for w in worlds if tuple(w) not in seen]
        if len(seen) + len(new) > cap:
            raise _Capped
        for w, got in zip(new, fails(new) if new else []):
            if got is None:
                raise _Unrun
            seen[tuple(w)] = got
        return [seen[tuple(w)] for w in worlds]

    s = list(whole)
    try:
        while len(s) > 2:  # 1. halves (both at once: they share no GPU)
            left, right = s[:len(s) // 2], s[len(s) // 2:]
            lf, rf = run(left, right)
            if not (lf or rf):
                break
            s = left if lf else right
        if len(s) > 2:  # 2. both halves pass: what of each half the fault needs
            b.note = f"passes on each half of {len(s)} ranks, fails on the whole: the fault spans the halves"
            left, right = s[:len(s) // 2], s[len(s) // 2:]
            keep_l = _narrow(left, lambda part: run(part + right)[0])
            keep_r = _narrow(right, lambda part: run(keep_l + part)[0])
            culprit = keep_l + keep_r
            if not run(culprit)[0]:
                b.culprit, b.kind = s, "whole"
                b.note = (f"passes on each half, fails on the whole ({len(s)} ranks), and no smaller set found "
                          f"fails ({', '.join(culprit)} passes): the fault needs them together -- not one GPU, "
                          "node or link")
                return b
            s = culprit
        b.culprit = s
        if len(s) == 2:  # 3. a GPU, or the link between the two
            b.kind, b.culprit = _pair(s, whole, run)
        else:
            b.kind = "gpu" if len(s) == 1 else "set"
    except _Capped:
        b.culprit, b.kind = s, "capped"
        b.note = f"stopped at {cap} runs (fabric.datacheck_bisect_runs): narrowed to {', '.join(s)}"
    except _Unrun:
        b.culprit, b.kind = s, "inconclusive"
        b.note = f"a run could not run: narrowed to {', '.join(s)} before it"
    return b


class _Capped(Exception):
    pass


class _Unrun(Exception):
    pass


def _narrow(part: list[str], fails: Callable[[list[str]], bool]) -> list[str]:
    """The smallest half-by-half piece of `part` that still fails with the rest (single fault: when
    the first half passes, the second is taken without a run)."""
    while len(part) > 1:
        a, b = part[:len(part) // 2], part[len(part) // 2:]
        part = a if fails(a) else b
    return part


def _pair(pair: list[str], whole: list[str], run: Callable[..., list[bool]]) -> tuple[str, list[str]]:
    """A failing pair: each member with a third GPU of another node (two different thirds, both runs
    at once). A member that fails with its third too is the GPU; neither: the link between the two."""
    thirds: list[str] = []
    for m in pair:
        others = [o for o in whole if o not in pair and o not in thirds]
        if not others:
            return "link", pair
        thirds.append(next((o for o in others if o.split("/")[0] != m.split("/")[0]), others[0]))
    got = run(*[sorted([m, t], key=whole.index) for m, t in zip(pair, thirds)])
    bad = [m for m, f in zip(pair, got) if f]
    return ("link", pair) if not bad else ("gpu", bad)


def needs_bisection(p: Pass) -> bool:
    """The whole pass failed without naming its culprit: no wrong element located, no member that
    never arrived -- a hang or a collective error -- and every rank's verdict was read (a member
    without one is an output the suite lost, could not observe: never bisected into a fault)."""
    return not p.ok and not p.unrun() and not p.unparsed and not p.silent() and not p.wrong() and not p.absent()


def run_all(hosts: dict[str, Host], rack: Rack) -> Outcome:
    """The whole rack's pass, then the bisection when it is needed and the rack file asks for it."""
    world = members(rack, hosts)
    cfg = rack.fabric
    port = [cfg.datacheck_port]

    def next_port() -> int:
        port[0] = cfg.datacheck_port + (port[0] - cfg.datacheck_port + 1) % 64
        return port[0]

    whole = run_pass(hosts, rack, world, "whole", cfg.datacheck_port)
    out = Outcome(whole)
    if not cfg.datacheck_bisect or not needs_bisection(whole) or len(world) < 2:
        return out

    def fails(worlds: list[list[str]]) -> list[bool | None]:
        labelled = [(w, f"bisect {len(out.runs) + i + 1}", next_port()) for i, w in enumerate(worlds)]
        got = fanout(labelled, lambda x: run_pass(hosts, rack, *x))
        res: list[bool | None] = []
        for p in got:
            if isinstance(p, Exception):
                raise p  # run_pass says every node's failure in the pass: this is ours
            out.runs.append(p)
            res.append(None if p.unrun() or p.unparsed or p.silent() else not p.ok)
        return res

    out.bisection = bisect(world, fails, cfg.datacheck_bisect_runs)
    return out

