"""SRV-KV, SRV-TRANSLATION: what the ranks logged while booting (read by grep on
each node; the logs are never copied here)."""
import pytest

from rackgate.atom import logfacts
from rackgate.atom.logformat import Record
from rackgate.atom.logs import rank_table
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import not_booted, read_logs
from rackgate.gates import serverlogs
from rackgate.report.verdict import check

KV_PATTERNS = ("Memory budget:", "experts=", "exceeds available KV budget")


@pytest.fixture(scope="module")
def kv_records(server_logs):
    """{node: [records with Memory budget / experts]}, one grep per node for every rank's item."""
    return {n: read_logs(log.grep, *KV_PATTERNS) for n, log in server_logs.items()}


@pytest.mark.row("SRV-KV")
def test_kv_budget(dp_rank, rack, atom_server, server_logs, kv_records, facts, evidence):
    node = rank_table(rack)[dp_rank]
    log = server_logs[node]
    mine: list[Record] = []
    unattributed: list[Record] = []
    for rec in kv_records[node]:
        r = log.rank_of(rec)
        (mine if r == dp_rank else unattributed if r is None else []).append(rec)
    budgets = [b for b in (logfacts.memory_budget(r.text) for r in mine) if b]
    experts = [e for e in (logfacts.experts(r.text) for r in mine) if e is not None]
    errors = [e for e in (logfacts.kv_error(r.text) for r in mine) if e]
    if not budgets and not errors and unattributed:
        # No rank label on these lines (launched without ATOM_LOG_MORE): judge the node's lines.
        budgets = [b for b in (logfacts.memory_budget(r.text) for r in unattributed) if b]
        experts = [e for e in (logfacts.experts(r.text) for r in unattributed) if e is not None]
        errors = [e for e in (logfacts.kv_error(r.text) for r in unattributed) if e]
        if budgets and not errors and len(budgets) < len(log.ranks):
            raise CouldNotObserve(f"{node} logged {len(budgets)} unlabelled `Memory budget:` lines for "
                                  f"{len(log.ranks)} ranks: launch with launch.rank_labels = true to name them")
        budgets = [min(budgets, key=lambda b: b.available_for_kv)] if budgets else []
    boot = atom_server.boot
    if not budgets and not errors and boot is not None and not boot.ok and node not in boot.past_rendezvous:
        raise not_booted(boot)  # {node} stopped before the KV budget arithmetic
    if not budgets and not errors:
        raise CouldNotObserve(f"{node}: no `Memory budget:` line for dp{dp_rank} in {log.path}: nothing to judge")
    evidence.attach(f"Memory budget lines of dp{dp_rank}",
                    "\n".join([b.line for b in budgets] + [e.line for e in errors]) or "(none)")
    cfg = rack.serving
    want = serverlogs.expert_counts(cfg.model_experts, cfg.ep_size or len(rack.nodes) * rack.gpus_per_node,
                                    cfg.experts_per_rank)
    findings = serverlogs.kv(budgets, experts, cfg.min_available_kv_gb, want, errors)
    if budgets:
        facts.record("serving.kv.available_gb", budgets[-1].available_for_kv, where=f"{node}/dp{dp_rank}", unit="GB",
                     row="SRV-KV")
        if budgets[-1].num_kvcache_blocks is not None:
            facts.record("serving.kv.blocks", budgets[-1].num_kvcache_blocks, where=f"{node}/dp{dp_rank}", row="SRV-KV")
    check(not findings, "SRV-KV", f"{node}/dp{dp_rank}", "; ".join(findings))


@pytest.mark.row("SRV-TRANSLATION")
def test_translation(rack, atom_server, server_logs, evidence, facts):
    if atom_server.boot is not None and atom_server.boot.format_note:
        raise CouldNotObserve(atom_server.boot.format_note)
    per_node = {}
    for n, log in server_logs.items():
        # On B0 the healthy signature is an absence: it only counts in a log that says something.
        if not log.tail(5).strip():
            raise CouldNotObserve(f"{n}: the server log {log.path} is empty: no hotswap lines, and nothing to say "
                                  "that the server wrote any")
        c = logfacts.HotswapCounts()
        for rec in read_logs(log.grep, "installed eager", "outcome=translated", "reused tier",
                             "translation_status="):
            c.add(rec.raw)
        per_node[n] = vars(c)
        for k in ("installed", "translated", "reused"):
            facts.record(f"serving.translation.{k}", per_node[n][k], where=n, row="SRV-TRANSLATION")
    evidence.attach("hotswap counts per node", "\n".join(f"{n}: {c}" for n, c in per_node.items()))
    cfg = rack.serving
    findings = serverlogs.translation(rack.silicon, per_node, rack.gpus_per_node, cfg.min_translated, cfg.min_reused)
    check(not findings, "SRV-TRANSLATION", rack.name, f"silicon {rack.silicon}: " + "; ".join(findings))
